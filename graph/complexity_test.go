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

// pricedSchema is the executable schema as the server builds it (NewSchema), without resolvers.
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
