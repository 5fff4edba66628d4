package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/msggate/msggate/graph"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// Ensure the conversation list comes newest activity first, pages by cursor, and carries unread
// counts and last messages; totalUnread adds them up.
func TestViewerConversations(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	// Activity order, oldest first: carol (2 messages), dave (1), erin (3, one of them alice's).
	g.Send("carol", "alice", "", 2)
	g.Send("dave", "alice", "", 1)
	g.Send("erin", "alice", "", 2)
	g.SendGQL(alice, map[string]any{"recvID": "erin", "contentType": 101, "content": "mine"})

	var page gatewaytest.Viewer
	g.Query(alice, gatewaytest.ViewerQuery, map[string]any{"first": 2}, &page)
	v := page.Viewer
	if v.UserID != "alice" || v.TotalUnread != 3 { // carol 2, dave 1, erin 0 (alice answered)
		t.Fatalf("viewer %s totalUnread %d, want alice 3", v.UserID, v.TotalUnread)
	}
	nodes := v.Conversations.Nodes
	if len(nodes) != 2 || nodes[0].ID != "si_alice_erin" || nodes[1].ID != "si_alice_dave" || !v.Conversations.PageInfo.HasNextPage {
		t.Fatalf("first page: %+v", v.Conversations)
	}
	if nodes[0].UnreadCount != 0 || nodes[0].ReadSeq != 3 || nodes[0].LastMessage == nil || *nodes[0].LastMessage.Content != "mine" {
		t.Errorf("erin: %+v (alice's own last message reads everything before it)", nodes[0])
	}
	g.Query(alice, gatewaytest.ViewerQuery, map[string]any{"first": 2, "after": *v.Conversations.PageInfo.EndCursor}, &page)
	nodes = page.Viewer.Conversations.Nodes
	if len(nodes) != 1 || nodes[0].ID != "si_alice_carol" || nodes[0].UnreadCount != 2 || page.Viewer.Conversations.PageInfo.HasNextPage {
		t.Fatalf("second page: %+v", page.Viewer.Conversations)
	}
	for _, tc := range []struct {
		vars map[string]any
		code string
	}{
		{map[string]any{"first": 101}, "LIMIT_EXCEEDED"},
		{map[string]any{"first": 0}, "BAD_USER_INPUT"},
		{map[string]any{"after": "not-a-cursor!"}, "BAD_USER_INPUT"},
	} {
		if code := g.ErrorCode(alice, gatewaytest.ViewerQuery, tc.vars); code != tc.code {
			t.Errorf("%v: code %q, want %q", tc.vars, code, tc.code)
		}
	}
}

// Ensure a page of 100 conversations with last messages and unread counts costs, on a warm
// cache, one Redis round trip for the conversation list with its seq and read state (the
// instance remembers the list it read and asks only for its version), one for chunks (none
// when the instance holds them in memory under the versions the state read names, or holds
// the nodes rendered from the same states: an in-process hit costs no round trip), and no
// MongoDB query.
func TestViewerConversationsPageIsBatched(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		chunkMemory, renderedNodes int
		chunkTrips                 int
	}{
		{"chunk memory and rendered nodes off", -1, -1, 1},
		{"chunk memory on", 0, -1, 0},
		{"rendered nodes on", -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testViewerConversationsPage(t, int64(tc.chunkMemory), tc.renderedNodes, tc.chunkTrips)
		})
	}
}

func testViewerConversationsPage(t *testing.T, chunkMemory int64, renderedNodes, chunkTrips int) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.ChunkMemory = chunkMemory
		c.RenderedNodes = renderedNodes
		// A hundred sibling resolvers under -race on a busy machine can lag each other by more
		// than the harness's 20 ms: the batch is held open long enough for all of them, since
		// what is counted is the batching, not the wait.
		c.Handler.Loaders = graph.LoaderOptions{Wait: 200 * time.Millisecond}
	})
	// Ten batches of ten: FerretDB's bulk upserts slow down with the number of statements.
	for batch := 0; batch < 10; batch++ {
		msgs := make([]*im.Message, 10)
		for i := range msgs {
			msgs[i] = &im.Message{SendID: fmt.Sprintf("p%d%d", batch, i), RecvID: "alice", ContentType: 101, Content: "hello"}
		}
		if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	alice := g.Token("alice")
	var page gatewaytest.Viewer
	// Warms the cache. The first read may fill the states from MongoDB, without a chunks
	// version, so its nodes are rendered but not remembered: the second remembers them.
	for range 2 {
		g.Query(alice, gatewaytest.ViewerQuery, map[string]any{"first": 100}, &page)
	}
	g.Mongo.Reset()
	g.RoundTrips.Take()
	g.Query(alice, gatewaytest.ViewerQuery, map[string]any{"first": 100}, &page)
	if n := len(page.Viewer.Conversations.Nodes); n != 100 || page.Viewer.TotalUnread != 100 {
		t.Fatalf("got %d conversations, totalUnread %d", n, page.Viewer.TotalUnread)
	}
	for _, c := range page.Viewer.Conversations.Nodes {
		if c.UnreadCount != 1 || c.LastMessage == nil || *c.LastMessage.Content != "hello" {
			t.Fatalf("conversation %+v", c)
		}
	}
	trips := g.RoundTrips.Take()
	if n := testenv.Matching(trips, "mget", ":seqstate"); n != 1 {
		t.Errorf("%d Redis round trips read seq state, want 1", n)
	}
	// The instance read the list before: it asks only whether the list's version moved.
	if n := testenv.Matching(trips, ":convsv"); n != 1 {
		t.Errorf("%d Redis round trips read the conversation list's version, want 1", n)
	}
	if n := testenv.Matching(trips, "smembers", ":convs"); n != 0 {
		t.Errorf("%d Redis round trips read the unchanged conversation list again, want 0", n)
	}
	for _, trip := range trips {
		if testenv.Matching([][]string{trip}, ":convsv") == 1 && testenv.Matching([][]string{trip}, "mget", ":seqstate") == 0 {
			t.Errorf("the list was read without its states: %q", trip)
		}
	}
	if n := testenv.Matching(trips, "hmget", ":chunk:"); n != chunkTrips {
		t.Errorf("%d Redis round trips read chunks, want %d", n, chunkTrips)
	}
	mongo := 0
	for _, coll := range []string{"msg", "seq", "seq_user", "user_conversation", "group_member"} {
		mongo += g.Mongo.Count(coll, "find")
	}
	if mongo != 0 {
		t.Errorf("%d MongoDB queries, want none", mongo)
	}
}

// Ensure each user's conversation list, cached in Redis, never lags a change acknowledged by
// another instance: a new conversation shows in the next list read on the other instance, a
// group the user left is gone from it, and a warm list costs no MongoDB query.
func TestConversationListAcrossInstances(t *testing.T) {
	pair := gatewaytest.StartPair(t, nil)
	a, b := pair[0], pair[1]
	alice := a.Token("alice")
	list := func() []string {
		t.Helper()
		var v gatewaytest.Viewer
		b.Query(alice, gatewaytest.ViewerQuery, map[string]any{"first": 100}, &v)
		var ids []string
		for _, n := range v.Viewer.Conversations.Nodes {
			ids = append(ids, n.ID)
		}
		slices.Sort(ids)
		return ids
	}
	a.Send("bob", "alice", "", 1)
	list()
	b.Mongo.Reset()
	if got := list(); !slices.Equal(got, []string{"si_alice_bob"}) {
		t.Fatalf("list %v", got)
	}
	if n := b.Mongo.Count("user_conversation", "find"); n != 0 {
		t.Errorf("a warm list read MongoDB's list %d times", n)
	}

	a.SendGQL(a.Token("carol"), map[string]any{"recvID": "alice", "contentType": 101, "content": "new"})
	if got := list(); !slices.Equal(got, []string{"si_alice_bob", "si_alice_carol"}) {
		t.Fatalf("after carol's first message on the other instance: %v", got)
	}
	a.Query(a.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "alice"}, {"userID": "bob", "role": "OWNER"}}}, &struct{}{})
	a.Send("bob", "", "team", 1)
	if got := list(); !slices.Equal(got, []string{"sg_team", "si_alice_bob", "si_alice_carol"}) {
		t.Fatalf("after joining team: %v", got)
	}
	a.Query(a.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "bob", "role": "OWNER"}}}, &struct{}{})
	if got := list(); !slices.Equal(got, []string{"si_alice_bob", "si_alice_carol"}) {
		t.Fatalf("after leaving team: %v", got)
	}
}
