package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// pricedSchema is the executable schema as NewHandler builds it, without resolvers.
func pricedSchema() *executableSchema {
	cfg := Config{}
	priceLists(&cfg.Complexity)
	return NewExecutableSchema(cfg).(*executableSchema)
}

func load(t *testing.T, query string) (*ast.QueryDocument, *ast.OperationDefinition) {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(pricedSchema().Schema(), query)
	if len(errs) > 0 {
		t.Fatalf("invalid test query: %v", errs)
	}
	return doc, doc.Operations[0]
}

// Ensure depth counts nested fields with fragments written out in place, not introspection,
// and aliases count every aliased field as often as its fragment is spread.
func TestMeasureShape(t *testing.T) {
	for _, tc := range []struct {
		name           string
		query          string
		depth, aliases int
	}{
		{"flat", `{ conversation(id: "x") { id } }`, 2, 0},
		{"aliases", `{ a: conversation(id: "x") { id } b: conversation(id: "y") { i: id } }`, 2, 3},
		{"alias equal to the name is none", `{ conversation: conversation(id: "x") { id } }`, 2, 0},
		{"named fragment", `query { conversation(id: "x") { ...F } }
			fragment F on Conversation { history { messages { revoke { userID } } } }`, 5, 0},
		{"inline fragment", `{ conversation(id: "x") { ... on Conversation { lastMessage { seq } } } }`, 3, 0},
		{"fragment spread twice", `query { c: conversation(id: "x") { lastMessage { ...M } history { messages { ...M } } } }
			fragment M on Message { a: seq b: seq }`, 4, 5},
		{"introspection does not count towards depth", `{ __schema { types { fields { type { ofType { ofType { ofType {
			ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } } } }`, 1, 0},
		{"aliases inside introspection count", `{ __type(name: "Message") { a: name b: kind } }`, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, op := load(t, tc.query)
			got := measureShape(doc, op)
			if got.depth != tc.depth || got.aliases != tc.aliases {
				t.Errorf("depth %d, aliases %d; want %d, %d", got.depth, got.aliases, tc.depth, tc.aliases)
			}
			if introspects := strings.Contains(tc.query, "__"); got.introspects != introspects {
				t.Errorf("introspects: %v, want %v", got.introspects, introspects)
			}
		})
	}
}

// Ensure fragments that spread each other twice at every level, which would write out into
// 2^60 fields, are measured without writing them out, and their aliases saturate rather than
// wrap around to a small number.
func TestMeasureShapeOfExponentialFragments(t *testing.T) {
	var q strings.Builder
	q.WriteString("query { messages(conversationID: \"x\", seqs: [1]) { ...F60 } }\n")
	q.WriteString("fragment F0 on Message { a: seq }\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&q, "fragment F%d on Message { ...F%d ... on Message { ...F%d } }\n", i, i-1, i-1)
	}
	doc, op := load(t, q.String())
	got := measureShape(doc, op)
	if got.depth != 2 || got.aliases != 1<<60 {
		t.Errorf("depth %d, aliases %d; want 2, %d", got.depth, got.aliases, 1<<60)
	}
	q.WriteString("fragment F61 on Message { ...F60 ...F60 a1: seq }\n" +
		"fragment F62 on Message { ...F61 ...F61 }\nfragment F63 on Message { ...F62 ...F62 }\n")
	doc, _ = load(t, strings.Replace(q.String(), "...F60 } }", "...F63 } }", 1))
	if got := measureShape(doc, doc.Operations[0]); got.aliases < DefaultMaxAliases {
		t.Errorf("2^63 aliases measured as %d", got.aliases)
	}
}

// Ensure every field whose result size a client chooses through an argument (a page size, or
// the list of items it asks for) is priced by that size. A field added without a price would
// cost 1 however many items it returns, which is what the complexity limit is there to stop:
// give it one in priceLists.
func TestListFieldsArePriced(t *testing.T) {
	es := pricedSchema()
	const n = 7
	for _, typ := range es.Schema().Types {
		if typ.Kind != ast.Object || strings.HasPrefix(typ.Name, "__") {
			continue
		}
		for _, f := range typ.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			sized := false
			args := map[string]any{}
			for _, a := range f.Arguments {
				switch {
				case a.Type.Elem != nil:
					items := make([]any, n)
					for i := range items {
						items[i] = sampleValue(a.Type.Elem)
					}
					args[a.Name] = items
					sized = sized || f.Type.Elem != nil
				case a.Name == "first" || a.Name == "last" || a.Name == "limit":
					args[a.Name] = n
					sized = true
				default:
					args[a.Name] = sampleValue(a.Type)
				}
			}
			if !sized {
				continue
			}
			const child = 3
			cost, ok := es.Complexity(context.Background(), typ.Name, f.Name, child, args)
			if !ok || cost < n*child {
				t.Errorf("%s.%s returns as many items as a client asks for, but costs %d (priced: %v) for %d items of cost %d; give it a price in priceLists",
					typ.Name, f.Name, cost, ok, n, child)
			}
		}
	}
}

func sampleValue(t *ast.Type) any {
	switch t.Name() {
	case "Int", "Int64", "Float":
		return 1
	case "Boolean":
		return false
	}
	return "x"
}

// Ensure the examples in priceLists' comment cost what it says, under the default budget or
// over it.
func TestComplexityExamples(t *testing.T) {
	es := pricedSchema()
	var allSeqs strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&allSeqs, "%d ", i)
	}
	const everyField = `conversationID seq status clientMsgID serverMsgID sendID recvID groupID sessionType
		contentType content sendTime isRead revoke { userID role time } atUserIDs ex`
	for _, tc := range []struct {
		name     string
		query    string
		min, max int
	}{
		{"1000 seqs, every field", `{ messages(conversationID: "x", seqs: [` + allSeqs.String() + `]) { ` + everyField + ` } }`, 2001, 2001},
		{"history of 200, every field", `{ conversation(id: "x") { maxSeq history(limit: 200) { messages { ` + everyField + ` } hasMoreBefore } } }`, 402, 402},
		{"history of 200 around a seq, every field", `{ conversation(id: "x") { maxSeq history(aroundSeq: 7, limit: 200) { messages { ` + everyField + ` } hasMoreBefore } } }`, 402, 402},
		{"history of 200 around a client message ID", `{ conversation(id: "x") { history(aroundClientMsgID: "q", limit: 200) { messages { seq } } } }`, 202, 202},
		{"default history around a seq", `{ conversation(id: "x") { history(aroundSeq: 7) { messages { seq } } } }`, 52, 52},
		{"100 conversations with 20 messages each", `{ viewer { conversations(first: 100) { nodes { id unreadCount
			lastMessage { seq content } history(limit: 20) { messages { seq content revoke { userID } } } } pageInfo { endCursor } } } }`, 4402, 4402},
		{"100 conversations with 50 messages each", `{ viewer { conversations(first: 100) { nodes {
			history(limit: 50) { messages { seq content } } } } } }`, 5202, 5202},
		{"seqAtTime in 100 conversations", `{ viewer { conversations(first: 100) { nodes { seqAtTime(time: 1) } } } }`, 2502, 2502},
		{"three times 1000 seqs", `query($s: [Int64!]!) { a: messages(conversationID: "x", seqs: $s) { revoke { userID } }
			b: messages(conversationID: "y", seqs: $s) { revoke { userID } } c: messages(conversationID: "z", seqs: $s) { revoke { userID } } }`, 6003, 6003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, op := load(t, tc.query)
			seqs := make([]any, 1000)
			for i := range seqs {
				seqs[i] = i + 1
			}
			got := complexity.Calculate(context.Background(), es, op, map[string]any{"s": seqs}, complexity.WithFixedScalarValue(0))
			if got < tc.min || got > tc.max {
				t.Errorf("complexity %d, want %d..%d", got, tc.min, tc.max)

			}
			if fits := got <= DefaultMaxComplexity; fits != (tc.max <= DefaultMaxComplexity) {
				t.Errorf("complexity %d: fits the budget of %d: %v", got, DefaultMaxComplexity, fits)
			}
		})
	}
}
