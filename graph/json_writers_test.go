package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/graph/model"
)

// selectEverything is a selection of every field of typ as the schema has it, and of every
// field of the object types beneath it.
func selectEverything(schema *ast.Schema, typ string) string {
	var b strings.Builder
	b.WriteString("{ __typename")
	for _, f := range schema.Types[typ].Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		b.WriteString(" " + f.Name)
		if def := schema.Types[f.Type.Name()]; def.Kind == ast.Object {
			b.WriteString(" " + selectEverything(schema, def.Name))
		}
	}
	b.WriteString(" }")
	return b.String()
}

// writtenBy marshals v as gqlgen would marshal the field at path (a chain of single fields
// from the root) of query.
func writtenBy(t *testing.T, schema *ast.Schema, query string, path []string, v graphql.ContextMarshaler) map[string]any {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(schema, query)
	if len(errs) > 0 {
		t.Fatalf("the test's query does not fit the schema: %v", errs)
	}
	op := doc.Operations[0]
	var field *ast.Field
	sel := op.SelectionSet
	for _, name := range path {
		field = nil
		for _, s := range sel {
			if f, ok := s.(*ast.Field); ok && f.Name == name {
				field = f
			}
		}
		if field == nil {
			t.Fatalf("no field %s in %s", name, query)
		}
		sel = field.SelectionSet
	}
	ctx := graphql.WithOperationContext(context.Background(), &graphql.OperationContext{Doc: doc, Operation: op, Variables: map[string]any{}})
	ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: field, Selections: field.SelectionSet}})
	var out bytes.Buffer
	if err := v.MarshalGQLContext(ctx, &out); err != nil {
		t.Fatalf("%s: %v", strings.Join(path, "."), err)
	}
	var written map[string]any
	if err := json.Unmarshal(out.Bytes(), &written); err != nil {
		t.Fatalf("%s wrote invalid JSON %s: %v", strings.Join(path, "."), out.Bytes(), err)
	}
	return written
}

// assertEveryField fails for each field of typ (and of the objects beneath) the schema has
// and written lacks.
func assertEveryField(t *testing.T, schema *ast.Schema, typ string, written map[string]any) {
	t.Helper()
	for _, f := range schema.Types[typ].Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		v, ok := written[f.Name]
		if !ok {
			t.Errorf("%s.%s is in the schema but not written", typ, f.Name)
			continue
		}
		if def := schema.Types[f.Type.Name()]; def.Kind == ast.Object {
			objects, _ := v.([]any)
			if o, isObject := v.(map[string]any); isObject {
				objects = []any{o}
			}
			if len(objects) == 0 {
				t.Errorf("%s.%s was written as %v: the test's value should fill it", typ, f.Name, v)
			}
			for _, o := range objects {
				assertEveryField(t, schema, def.Name, o.(map[string]any))
			}
		}
	}
	if written["__typename"] != typ {
		t.Errorf("%s written with __typename %v", typ, written["__typename"])
	}
}

// fullMessage has every field set, so that each is written with a value.
func fullMessage() *model.Message {
	s := func(v string) *string { return &v }
	n, t := 101, int64(1700000000000)
	return &model.Message{ConversationID: "sg_g", Seq: 7, Status: model.MessageStatusRevoked, ClientMsgID: s("c"), ServerMsgID: s("s"),
		SendID: s("alice"), RecvID: s("bob"), GroupID: s("g"), SessionType: &n, ContentType: &n, Content: s("hi"), SendTime: &t,
		IsRead: true, Revoke: &model.Revoke{UserID: "alice", Role: 1, Time: t}, AtUserIDs: []string{"bob"}, Ex: s("{}")}
}

// Ensure the types that write their own JSON (model.Message, model.History and the Revoke
// inside a message) write every field the schema gives them: the fields asked for are taken
// from the schema gqlgen generated the executor from, so a field added to the schema and not
// to the writer fails here (the writer refuses a field it does not know).
func TestJSONWritersWriteEverySchemaField(t *testing.T) {
	schema := NewExecutableSchema(Config{}).Schema()
	messages := `{ messages(conversationID: "c", seqs: [7]) ` + selectEverything(schema, "Message") + ` }`
	assertEveryField(t, schema, "Message", writtenBy(t, schema, messages, []string{"messages"}, fullMessage()))

	history := `{ conversation(id: "c") { history ` + selectEverything(schema, "History") + ` } }`
	page := &model.History{Messages: []*model.Message{fullMessage(), fullMessage()}, HasMoreBefore: true}
	assertEveryField(t, schema, "History", writtenBy(t, schema, history, []string{"conversation", "history"}, page))
}
