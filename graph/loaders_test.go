package graph

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/devtools/graphqltest"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// countingConversations is a ConversationSource that remembers the batches it is asked and
// answers every conversation as readable, with the conversation's number as its max seq.
type countingConversations struct {
	mu         gosync.Mutex
	canRead    [][]string
	states     [][]string
	failStates error
	panicRead  bool
	// list is the viewer's conversation list (UserConversations).
	list []im.SeqState
}

func (c *countingConversations) ParseConversationID(id string) (im.Conversation, error) {
	return im.Conversation{ID: id, Kind: im.GroupChat}, nil
}

func (c *countingConversations) CanRead(_ context.Context, _ string, ids []string) ([]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canRead = append(c.canRead, slices.Clone(ids))
	if c.panicRead {
		panic("a bug in the access check")
	}
	out := make([]bool, len(ids))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

func (c *countingConversations) States(_ context.Context, _ string, ids []string) ([]im.SeqState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states = append(c.states, slices.Clone(ids))
	if c.failStates != nil {
		return nil, c.failStates
	}
	out := make([]im.SeqState, len(ids))
	for i, id := range ids {
		out[i] = im.SeqState{ConversationID: id, MaxSeq: int64(len(id))}
	}
	return out, nil
}

func (c *countingConversations) UserConversations(context.Context, string) ([]im.SeqState, error) {
	return c.list, nil
}

// batchSizes are the sizes of batches, smallest first.
func batchSizes(batches [][]string) []int {
	var out []int
	for _, b := range batches {
		out = append(out, len(b))
	}
	sort.Ints(out)
	return out
}

// askAs runs query over convs as alice and returns its answer.
func askAs(t *testing.T, convs ConversationSource, o LoaderOptions, query string) map[string]any {
	t.Helper()
	return askWithChunks(t, convs, nil, o, query)
}

// askWithChunks is askAs with a chunk source.
func askWithChunks(t *testing.T, convs ConversationSource, chunks history.ChunkSource, o LoaderOptions, query string) map[string]any {
	t.Helper()
	return askResolver(t, &Resolver{Conversations: convs, Chunks: chunks, Mentions: history.ChunkMentions{Chunks: chunks}}, o, query)
}

// askResolver runs query as alice through gqlgen's executor over r, with the error presenter
// and panic recovery the server installs and fresh loaders, as the server does for a request
// (without HTTP: graph does not know the server), and returns the answer as a client reads it.
func askResolver(t *testing.T, r *Resolver, o LoaderOptions, query string) map[string]any {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if r.Logger == nil {
		r.Logger = logger
	}
	exec := executor.New(NewSchema(r))
	exec.SetErrorPresenter(ErrorPresenter(logger))
	exec.SetRecoverFunc(RecoverFunc(logger))
	ctx := auth.WithViewer(context.Background(), auth.Viewer{UserID: "alice"}, nil)
	ctx = r.WithLoaders(graphql.StartOperationTrace(ctx), "alice", o)
	var resp *graphql.Response
	rc, errs := exec.CreateOperationContext(ctx, &graphql.RawParams{Query: query})
	if errs != nil {
		resp = exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
	} else {
		responses, ctx := exec.DispatchOperation(ctx, rc)
		resp = responses(ctx)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return out
}

// Ensure a query with one resolver per level answers without waiting out the loaders' wait:
// there is no sibling whose keys could join its batch.
func TestLoneResolverDoesNotWaitForSiblings(t *testing.T) {
	var convs countingConversations
	var observed []string
	var mu gosync.Mutex
	o := LoaderOptions{Wait: time.Minute, ObserveBatch: func(loader string, keys int) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, loader+":"+strings.Repeat("k", keys))
	}}
	began := time.Now()
	// id and __typename are siblings without a resolver: nothing they do can join a batch.
	out := askAs(t, &convs, o, `{ conversation(id: "c12") { __typename id unreadCount } }`)
	if took := time.Since(began); took > 30*time.Second {
		t.Fatalf("the query took %s: it waited for siblings that never came", took)
	}
	want := map[string]any{"conversation": map[string]any{"__typename": "Conversation", "id": "c12", "unreadCount": float64(3)}}
	if got := out["data"]; !jsonEqual(got, want) {
		t.Fatalf("answer %v, want data %v", out, want)
	}
	if len(convs.canRead) != 1 || len(convs.states) != 1 {
		t.Fatalf("access batches %v, state batches %v: want one of each", convs.canRead, convs.states)
	}
	if !slices.Equal(observed, []string{"access:k", "states:k"}) {
		t.Fatalf("the tracer saw batches %v, want access:k then states:k", observed)
	}
}

// Ensure sibling resolvers share one batch per loader (through the dataloader's wait), a key
// asked twice is fetched once, and MaxBatch splits a batch.
func TestSiblingResolversShareOneBatch(t *testing.T) {
	query := `{ a: conversation(id: "c1") { unreadCount maxSeq }
		b: conversation(id: "c22") { unreadCount }
		c: conversation(id: "c1") { readSeq } }`
	var convs countingConversations
	// Generous: under -race sibling resolvers may lag each other by many milliseconds.
	out := askAs(t, &convs, LoaderOptions{Wait: 200 * time.Millisecond}, query)
	if out["errors"] != nil {
		t.Fatalf("errors: %v", out["errors"])
	}
	data := out["data"].(map[string]any)
	if got := data["b"].(map[string]any)["unreadCount"]; got != float64(3) {
		t.Fatalf("b.unreadCount %v, want 3", got)
	}
	if !slices.Equal(batchSizes(convs.canRead), []int{2}) || !slices.Equal(batchSizes(convs.states), []int{2}) {
		t.Fatalf("access batches %v, state batches %v: want one of c1 and c22 each", convs.canRead, convs.states)
	}

	// Two fields of one conversation that both read its state are siblings with resolvers:
	// they share the dataloader's batch instead of each sending its own.
	var pair countingConversations
	askAs(t, &pair, LoaderOptions{Wait: 200 * time.Millisecond}, `{ conversation(id: "c1") { id unreadCount maxSeq } }`)
	if len(pair.states) != 1 {
		t.Fatalf("state batches %v, want one for both fields", pair.states)
	}

	var small countingConversations
	askAs(t, &small, LoaderOptions{Wait: 200 * time.Millisecond, MaxBatch: 2},
		`{ a: conversation(id: "c1") { id } b: conversation(id: "c2") { id } c: conversation(id: "c3") { id } }`)
	if got := batchSizes(small.canRead); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("three keys with MaxBatch 2: access batches of %v, want 1 and 2", got)
	}
}

// Ensure a failing or panicking batch fails the fields that needed it, with the store's error,
// whether the caller was lone or batched with siblings, and never answers them as data.
func TestLoaderFailuresFailTheirFields(t *testing.T) {
	down := im.Errorf(im.EUNAVAILABLE, "store down")
	for _, query := range []string{
		`{ conversation(id: "c1") { unreadCount } }`,
		`{ a: conversation(id: "c1") { unreadCount } b: conversation(id: "c2") { unreadCount } }`,
	} {
		convs := countingConversations{failStates: down}
		out := askAs(t, &convs, LoaderOptions{Wait: 20 * time.Millisecond}, query)
		if out["data"] != nil || !strings.Contains(graphqltest.ErrorCodes(out), "UNAVAILABLE") {
			t.Errorf("%s: answer %v, want an UNAVAILABLE error and no data", query, out)
		}
		buggy := countingConversations{panicRead: true}
		out = askAs(t, &buggy, LoaderOptions{Wait: 20 * time.Millisecond}, query)
		if out["data"] != nil || !strings.Contains(graphqltest.ErrorCodes(out), "INTERNAL") {
			t.Errorf("%s with a panicking batch: answer %v, want an INTERNAL error and no data", query, out)
		}
	}
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errors.Join(errA, errB) == nil && string(ja) == string(jb)
}
