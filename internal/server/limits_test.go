package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/graph"
)

// load parses query against msggate's schema.
func load(t *testing.T, query string) (*ast.QueryDocument, *ast.OperationDefinition) {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(graph.NewSchema(&graph.Resolver{}).Schema(), query)
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
