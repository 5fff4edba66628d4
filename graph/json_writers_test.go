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
	"github.com/msggate/msggate/internal/devtools/graphqltest"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
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
		// A field with required arguments gets zero values for them (seqAtTime(time: 0)).
		var required []string
		for _, a := range f.Arguments {
			if a.Type.NonNull && a.DefaultValue == nil {
				required = append(required, a.Name+": 0")
			}
		}
		if len(required) > 0 {
			b.WriteString("(" + strings.Join(required, ", ") + ")")
		}
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
// and written lacks; an object field written as null or an empty list fails it too.
func assertEveryField(t *testing.T, schema *ast.Schema, typ string, written map[string]any) {
	t.Helper()
	assertFields(t, schema, typ, written, true)
}

// assertFields is assertEveryField; with filled false an object field may be null or empty.
func assertFields(t *testing.T, schema *ast.Schema, typ string, written map[string]any, filled bool) {
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
			if len(objects) == 0 && filled {
				t.Errorf("%s.%s was written as %v: the test's value should fill it", typ, f.Name, v)
			}
			for _, o := range objects {
				assertFields(t, schema, def.Name, o.(map[string]any), filled)
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

// chunksNowhere is a chunk source that holds no chunk: every seq reads as MISSING.
type chunksNowhere struct{ err error }

func (c chunksNowhere) LoadChunks(_ context.Context, refs []history.ChunkRef) ([]*im.Chunk, error) {
	if c.err != nil {
		return nil, c.err
	}
	return make([]*im.Chunk, len(refs)), nil
}

func (chunksNowhere) Remembered([]history.ChunkRef) ([]*im.Chunk, bool) { return nil, false }

// Ensure the conversation list's writer (model.ConversationConnection) writes every field the
// schema gives the page, its nodes, their last message and history, and its pageInfo: the
// query asks for all of them, taken from the schema, through the real handler.
func TestConversationPageWritesEverySchemaField(t *testing.T) {
	schema := NewExecutableSchema(Config{}).Schema()
	convs := &countingConversations{list: []im.SeqState{
		{ConversationID: "sg_one", MaxSeq: 3, ReadSeq: 1, LastTime: 2},
		{ConversationID: "sg_two", MaxSeq: 2, LastTime: 1},
	}}
	query := `{ viewer { conversations(first: 1) ` + selectEverything(schema, "ConversationConnection") + ` } }`
	out := askWithChunks(t, convs, chunksNowhere{}, LoaderOptions{}, query)
	if out["errors"] != nil {
		t.Fatalf("errors: %v", out["errors"])
	}
	page := out["data"].(map[string]any)["viewer"].(map[string]any)["conversations"].(map[string]any)
	assertFields(t, schema, "ConversationConnection", page, false)
	nodes := page["nodes"].([]any)
	if len(nodes) != 1 {
		t.Fatalf("nodes %v, want the first of two", nodes)
	}
	node := nodes[0].(map[string]any)
	if node["id"] != "sg_one" || node["kind"] != "GROUP" || node["unreadCount"] != float64(2) || node["maxSeq"] != float64(3) {
		t.Errorf("node %v", node)
	}
	last, _ := node["lastMessage"].(map[string]any)
	if last == nil || last["seq"] != float64(3) || last["status"] != "MISSING" {
		t.Errorf("lastMessage %v, want the MISSING placeholder at seq 3", node["lastMessage"])
	}
	if msgs := node["history"].(map[string]any)["messages"].([]any); len(msgs) != 3 {
		t.Errorf("history of %d messages, want 3", len(msgs))
	}
	if info := page["pageInfo"].(map[string]any); info["hasNextPage"] != true || info["endCursor"] == nil {
		t.Errorf("pageInfo %v", info)
	}
}

// Ensure the list answers as gqlgen would: each history alias with its own arguments, and a
// last message that cannot be read null with its error at its path, the rest of the page
// answered.
func TestConversationPageFieldsAndFailures(t *testing.T) {
	convs := &countingConversations{list: []im.SeqState{
		{ConversationID: "sg_one", MaxSeq: 30, LastTime: 2},
		{ConversationID: "sg_two", MaxSeq: 20, LastTime: 1},
	}}
	query := `{ viewer { conversations { nodes { id
		older: history(beforeSeq: 10, limit: 2) { messages { seq } hasMoreBefore }
		newest: history(limit: 1) { messages { seq } } } } } }`
	out := askWithChunks(t, convs, chunksNowhere{}, LoaderOptions{}, query)
	want := `{"viewer":{"conversations":{"nodes":[` +
		`{"id":"sg_one","older":{"messages":[{"seq":8},{"seq":9}],"hasMoreBefore":true},"newest":{"messages":[{"seq":30}]}},` +
		`{"id":"sg_two","older":{"messages":[{"seq":8},{"seq":9}],"hasMoreBefore":true},"newest":{"messages":[{"seq":20}]}}]}}}`
	var wantData any
	if err := json.Unmarshal([]byte(want), &wantData); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(out["data"], wantData) || out["errors"] != nil {
		t.Fatalf("answer %v, errors %v; want data %s", out["data"], out["errors"], want)
	}

	down := im.Errorf(im.EUNAVAILABLE, "chunks down")
	out = askWithChunks(t, convs, chunksNowhere{err: down}, LoaderOptions{},
		`{ viewer { conversations { nodes { id unreadCount lastMessage { seq } } } } }`)
	nodes := out["data"].(map[string]any)["viewer"].(map[string]any)["conversations"].(map[string]any)["nodes"].([]any)
	if len(nodes) != 2 || nodes[1].(map[string]any)["lastMessage"] != nil || nodes[1].(map[string]any)["unreadCount"] != float64(20) {
		t.Fatalf("nodes %v: want both, lastMessage null", nodes)
	}
	errs, _ := out["errors"].([]any)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one for each node's lastMessage", out["errors"])
	}
	first := errs[0].(map[string]any)
	path, _ := json.Marshal(first["path"])
	if string(path) != `["viewer","conversations","nodes",0,"lastMessage"]` || !strings.Contains(graphqltest.ErrorCodes(out), "UNAVAILABLE") {
		t.Fatalf("error %v, want UNAVAILABLE at viewer.conversations.nodes.0.lastMessage", first)
	}
}

// Ensure a remembered conversation node may select every field of its last message, whatever
// the schema gives Message and Revoke: a page that asks for all of them is remembered
// (rememberedFields is generated from the schema with them).
func TestRememberedNodesMaySelectEveryMessageField(t *testing.T) {
	schema := NewExecutableSchema(Config{}).Schema()
	query := `{ viewer { conversations { nodes { id unreadCount lastMessage ` + selectEverything(schema, "Message") + ` } } } }`
	doc, errs := gqlparser.LoadQuery(schema, query)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	nodes := doc.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field)
	if shapeOf(graphql.CollectedField{Field: nodes, Selections: nodes.SelectionSet}) == nil {
		t.Errorf("nodes selecting every field of their last message are not remembered: %s", query)
	}
	history := `{ viewer { conversations { nodes { id history { hasMoreBefore } } } } }`
	doc, errs = gqlparser.LoadQuery(schema, history)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	nodes = doc.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field)
	if shapeOf(graphql.CollectedField{Field: nodes, Selections: nodes.SelectionSet}) != nil {
		t.Error("nodes selecting their history are remembered")
	}
}
