package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/server"
)

// syncEvent is a syncEvents payload as a client decodes it.
type syncEvent = model.SyncEvent

type syncStateResult struct {
	SyncState struct {
		Token         string `json:"token"`
		TotalUnread   int64  `json:"totalUnread"`
		HasMore       bool   `json:"hasMore"`
		Conversations []struct {
			ID          string `json:"id"`
			MaxSeq      int64  `json:"maxSeq"`
			ReadSeq     int64  `json:"readSeq"`
			UnreadCount int64  `json:"unreadCount"`
		} `json:"conversations"`
	} `json:"syncState"`
}

type syncDifferenceResult struct {
	SyncDifference struct {
		Token   string      `json:"token"`
		HasMore bool        `json:"hasMore"`
		TooLong bool        `json:"tooLong"`
		Events  []syncEvent `json:"events"`
	} `json:"syncDifference"`
}

const syncStateQuery = `{ syncState { token totalUnread hasMore conversations { id maxSeq readSeq unreadCount } } }`
const syncDifferenceQuery = `query($since: String!, $limit: Int) { syncDifference(since: $since, limit: $limit) {
	token hasMore tooLong events { ` + gatewaytest.SyncEventFields + ` } } }`

func difference(g *gatewaytest.Gateway, token, since string, limit int) syncDifferenceResult {
	g.T.Helper()
	var d syncDifferenceResult
	g.Query(token, syncDifferenceQuery, map[string]any{"since": since, "limit": limit}, &d)
	return d
}

// Ensure the state summary and the difference after its token tell a device exactly what
// changed: new messages with unread counts (own messages never unread), reads with the new
// count, paging with hasMore; and that the summary's seq, read state and token cost one Redis
// round trip.
func TestSyncStateAndDifference(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	g.Send("alice", "bob", "", 3)

	g.RoundTrips.Take()
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	trips := g.RoundTrips.Take()
	if n := testenv.Matching(trips, "mget", "{si_alice_bob}:seqstate"); n != 1 {
		t.Errorf("seq state read in %d round trips, want 1: %v", n, trips)
	}
	together := 0
	for _, trip := range trips {
		if testenv.Matching([][]string{trip}, "{u:bob}:log") == 1 && testenv.Matching([][]string{trip}, "{si_alice_bob}:seqstate") == 1 &&
			testenv.Matching([][]string{trip}, "{u:bob}:read") == 1 {
			together++
		}
	}
	if testenv.Matching(trips, "{u:bob}:log") != 1 || together != 1 {
		t.Errorf("the token was not read in the state's round trip: %v", trips)
	}
	s := st.SyncState
	if s.TotalUnread != 3 || len(s.Conversations) != 1 || s.Conversations[0].UnreadCount != 3 || s.Token == "" {
		t.Fatalf("bob's state: %+v", s)
	}

	g.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob", readSeq: 2) { unreadCount } }`, nil, &struct{}{})
	g.Send("alice", "bob", "", 1)
	d := difference(g, bob, s.Token, 1).SyncDifference
	if d.TooLong || !d.HasMore || len(d.Events) != 1 {
		t.Fatalf("first page: %+v", d)
	}
	read := d.Events[0]
	if read.Type != "READ" || *read.ReadSeq != 2 || *read.UnreadCount != 1 || *read.MaxSeq != 3 {
		t.Errorf("READ event: %+v", read)
	}
	d = difference(g, bob, d.Token, 100).SyncDifference
	if d.HasMore || len(d.Events) != 1 {
		t.Fatalf("second page: %+v", d)
	}
	msg := d.Events[0]
	if msg.Type != "NEW_MESSAGE" || *msg.Seq != 4 || *msg.SendID != "alice" || *msg.UnreadCount != 2 || msg.Position != read.Position+1 {
		t.Errorf("NEW_MESSAGE event: %+v", msg)
	}
	if again := difference(g, bob, d.Token, 100).SyncDifference; len(again.Events) != 0 || again.Token != d.Token || again.TooLong {
		t.Errorf("difference at the head: %+v", again)
	}

	var ast syncStateResult
	g.Query(alice, syncStateQuery, nil, &ast)
	if ast.SyncState.TotalUnread != 0 {
		t.Errorf("alice has %d unread of her own messages", ast.SyncState.TotalUnread)
	}

	// A token of a log that is gone: tooLong, never a partial answer.
	if err := g.Cache.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	lost := difference(g, bob, d.Token, 100).SyncDifference
	if !lost.TooLong || len(lost.Events) != 0 {
		t.Errorf("difference from a lost log: %+v", lost)
	}
	for _, bad := range []struct {
		since string
		limit int
		code  string
	}{{"nonsense", 10, "BAD_USER_INPUT"}, {s.Token, 1001, "LIMIT_EXCEEDED"}, {s.Token, 0, "BAD_USER_INPUT"}} {
		if code := g.ErrorCode(bob, syncDifferenceQuery, map[string]any{"since": bad.since, "limit": bad.limit}); code != bad.code {
			t.Errorf("since %q limit %d: %s, want %s", bad.since, bad.limit, code, bad.code)
		}
	}
}

// Ensure a subscription on one instance replays from its token, then delivers live what is
// sent through another instance, in position order with no gap and no duplicate at the seam.
func TestSyncEventsAcrossInstances(t *testing.T) {
	g := gatewaytest.Start(t)
	cfg := gatewaytest.Config(g.Redis.URL(), testenv.Mongo(t))
	cfg.MongoDatabase = g.Config.MongoDatabase
	other := gatewaytest.New(t, cfg)
	other.Redis = g.Redis

	bob := g.Token("bob")
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	g.Send("alice", "bob", "", 2) // before subscribing: replayed from the log

	c := gatewaytest.ConnectWS(t, g.URL, bob, gatewaytest.WSOptions{})
	c.Subscribe(&st.SyncState.Token)
	for want := int64(1); want <= 2; want++ {
		if ev := c.NextEvent(); ev.Type != "NEW_MESSAGE" || *ev.Seq != want || ev.Position != want {
			t.Fatalf("replayed event %d: %+v", want, ev)
		}
	}
	if n := scrapeMetrics(g)["msggate_sync_subscribers"]; n != 1 {
		t.Errorf("msggate_sync_subscribers is %v with one subscription open", n)
	}
	other.Send("alice", "bob", "", 1) // live, through the other instance
	if ev := c.NextEvent(); ev.Type != "NEW_MESSAGE" || *ev.Seq != 3 || ev.Position != 3 || *ev.UnreadCount != 3 {
		t.Fatalf("live event: %+v", ev)
	}
	other.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob") { unreadCount } }`, nil, &struct{}{})
	if ev := c.NextEvent(); ev.Type != "READ" || *ev.ReadSeq != 3 || *ev.UnreadCount != 0 || ev.Position != 4 {
		t.Fatalf("READ from the other device: %+v", ev)
	}

	// A token from a lost log: one TOO_LONG, then the subscription completes.
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	stale := gatewaytest.ConnectWS(t, g.URL, bob, gatewaytest.WSOptions{})
	stale.Subscribe(&st.SyncState.Token)
	if ev := stale.NextEvent(); ev.Type != "TOO_LONG" {
		t.Fatalf("stale token: %+v", ev)
	}
	if m := stale.Next(); m["type"] != "complete" {
		t.Fatalf("after TOO_LONG: %v", m)
	}
}

// Ensure connection_init without a valid token closes the connection with 4403.
func TestSyncEventsNeedAToken(t *testing.T) {
	g := gatewaytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{}).Conn
	_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":{"Authorization":"Bearer nope"}}`))
	var err error
	for {
		if _, _, err = conn.Read(ctx); err != nil {
			break
		}
	}
	if websocket.CloseStatus(err) != 4403 {
		t.Fatalf("closed with %v, want 4403", err)
	}
}

// Ensure idle WebSocket connections are kept alive: "ka" messages on the legacy graphql-ws
// protocol, pings on graphql-transport-ws, at the configured interval.
func TestSyncEventsKeepAlive(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.KeepAlive = 50 * time.Millisecond })
	url := g.URL
	bob := g.Token("bob")
	for protocol, want := range map[string]string{"graphql-ws": "ka", "graphql-transport-ws": "ping"} {
		c := gatewaytest.ConnectWS(t, url, bob, gatewaytest.WSOptions{Protocol: protocol})
		for seen := 0; seen < 3; {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, b, err := c.Conn.Read(ctx)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v after %d keepalives", protocol, err, seen)
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			if m["type"] == want {
				seen++
				if want == "ping" {
					c.Write(map[string]any{"type": "pong"})
				}
			}
		}
	}
}

// Ensure a syncState page of 100 conversations reads their seq and read state, and the token,
// in one Redis round trip, after one more for the user's conversation list (cached in Redis: no
// MongoDB query once warm), and that the pages together list every conversation once.
func TestSyncStatePageOfHundredIsOneRoundTrip(t *testing.T) {
	g := gatewaytest.Start(t)
	const peers = 130
	msgs := make([]*im.Message, peers)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: "alice", RecvID: fmt.Sprintf("u%03d", i), ContentType: 101, Content: "hi"}
	}
	// In batches: FerretDB takes seconds for one bulk write of a hundred upserts.
	for lo := 0; lo < peers; lo += 20 {
		if _, err := g.Ingest.Ingest(context.Background(), msgs[lo:min(lo+20, peers)]); err != nil {
			t.Fatal(err)
		}
	}
	alice := g.Token("alice")
	seen := map[string]bool{}
	var after any
	for page := 1; ; page++ {
		var r struct {
			SyncState struct {
				HasMore       bool
				EndCursor     *string
				TotalUnread   int64
				Conversations []struct{ ID string }
			}
		}
		query := `query($after: String) { syncState(first: 100, after: $after) { hasMore endCursor totalUnread
			conversations { id maxSeq minSeq readSeq unreadCount } } }`
		if page == 1 {
			g.Query(alice, query, nil, &r) // fills the cached conversation list
		}
		g.RoundTrips.Take()
		g.Mongo.Reset()
		g.Query(alice, query, map[string]any{"after": after}, &r)
		trips := g.RoundTrips.Take()
		if n := testenv.Matching(trips, ":seqstate"); n != 1 {
			t.Errorf("page %d: seq state read in %d round trips, want 1", page, n)
		}
		if n := testenv.Matching(trips, ":convs"); n != 1 {
			t.Errorf("page %d: conversation list read in %d round trips, want 1", page, n)
		}
		// Besides the instance's own background round trips (its heartbeat, its check of the
		// store's identity), whenever they fall due.
		if n := len(trips) - testenv.Matching(trips, ":rate") - testenv.Matching(trips, ":instance:") - testenv.Matching(trips, ":storeid"); n != 2 {
			t.Errorf("page %d: %d Redis round trips besides the rate limit, want 2 (list; state and token): %v", page, n, trips)
		}
		if n := g.Mongo.Count("user_conversation", "find"); n != 0 {
			t.Errorf("page %d: %d MongoDB list queries on a warm cache, want 0", page, n)
		}
		if r.SyncState.TotalUnread != 0 {
			t.Errorf("alice has %d unread of her own messages", r.SyncState.TotalUnread)
		}
		for _, c := range r.SyncState.Conversations {
			if seen[c.ID] {
				t.Errorf("%s listed twice", c.ID)
			}
			seen[c.ID] = true
		}
		if !r.SyncState.HasMore {
			break
		}
		after = *r.SyncState.EndCursor
	}
	if len(seen) != peers {
		t.Errorf("the pages listed %d conversations, want %d", len(seen), peers)
	}
}

// Ensure a repeated revoke, delete or clear adds no second event: the first was announced
// (or, had its announcement failed, is announced from its intent, see outbox_test.go), and a
// device must not apply one change twice.
func TestSyncRepeatedChangesAreAnnouncedOnce(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	g.Send("alice", "bob", "", 2)
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	for range 2 {
		g.Query(alice, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 1) { status } }`, nil, &struct{}{})
		g.Query(alice, `mutation { deleteMessages(conversationID: "si_alice_bob", seqs: [2], forEveryone: true) { status } }`, nil, &struct{}{})
		g.Query(bob, `mutation { clearConversation(conversationID: "si_alice_bob") { minSeq } }`, nil, &struct{}{})
	}
	d := difference(g, bob, st.SyncState.Token, 100).SyncDifference
	var got []string
	for _, ev := range d.Events {
		got = append(got, string(ev.Type))
	}
	want := "REVOKE DELETE CLEAR"
	if strings.Join(got, " ") != want {
		t.Fatalf("bob's events %v, want %s", got, want)
	}
	last := d.Events[len(d.Events)-1]
	if *last.MinSeq != 3 || *last.UnreadCount != 0 {
		t.Errorf("the CLEAR: %+v, want minSeq 3 and no unread", last)
	}
}

// Ensure live events cross instances on a three-master Redis Cluster too: the log scripts run
// on the user's slot, and PUBLISH reaches a subscriber connected through another node.
func TestSyncEventsAcrossInstancesOnCluster(t *testing.T) {
	cluster := testenv.RedisCluster(t)
	mdb := testenv.Mongo(t)
	gws := [2]*gatewaytest.Gateway{gatewaytest.StartOnCluster(t, cluster, mdb), gatewaytest.StartOnCluster(t, cluster, mdb)}
	alice, bob := gws[0].Token("alice"), gws[0].Token("bob")
	c := gatewaytest.ConnectWS(t, gws[0].URL, bob, gatewaytest.WSOptions{})
	c.Subscribe(nil)
	other := gws[1]
	// Sends to several peers: their logs' slots spread over the masters.
	for i, peer := range []string{"bob", "carol", "dave"} {
		var r struct{ SendMessage struct{ Seq int64 } }
		other.Query(alice, `mutation($r: String) { sendMessage(input: {recvID: $r, contentType: 101, content: "hi"}) { seq } }`,
			map[string]any{"r": peer}, &r)
		if r.SendMessage.Seq != 1 {
			t.Fatalf("send %d: seq %d", i, r.SendMessage.Seq)
		}
	}
	ev := c.NextEvent()
	if ev.Type != "NEW_MESSAGE" || *ev.ConversationID != "si_alice_bob" || *ev.UnreadCount != 1 || ev.Position != 1 {
		t.Fatalf("bob's live event: %+v", ev)
	}
	other.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob") { unreadCount } }`, nil, &struct{}{})
	if ev := c.NextEvent(); ev.Type != "READ" || *ev.UnreadCount != 0 || ev.Position != 2 {
		t.Fatalf("bob's READ from the other instance: %+v", ev)
	}
}

// Ensure a subscriber survives its gateway's Redis restarting (and losing the log): the hub's
// subscription reconnects, and the subscriber is told TOO_LONG instead of silently missing
// what happened while Redis was away.
func TestSyncEventsAfterRedisRestart(t *testing.T) {
	g := gatewaytest.Start(t)
	bob := g.Token("bob")
	g.Send("alice", "bob", "", 1)
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	c := gatewaytest.ConnectWS(t, g.URL, bob, gatewaytest.WSOptions{})
	c.Subscribe(&st.SyncState.Token)
	gatewaytest.WaitFor(t, 20*time.Second, "the subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })

	g.Redis.Stop()
	g.Redis.Start()
	// The first send after the restart may still find Redis coming up; a client retries.
	gatewaytest.WaitFor(t, 30*time.Second, "a send after the restart", func() bool {
		r := g.Post(g.Token("alice"), `mutation { sendMessage(input: {recvID: "bob", contentType: 101, content: "back"}) { seq } }`, nil)
		return len(r.Errors) == 0
	})
	if ev := c.NextEvent(); ev.Type != "TOO_LONG" {
		t.Fatalf("after Redis lost the log the subscriber got %+v, want TOO_LONG", ev)
	}
}

// Ensure what a client controls over a WebSocket is bounded as over HTTP: subscriptions per
// connection, and operations by the user's rate limit.
func TestWebSocketLimits(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit, c.Handler.RateBurst = 0.001, 12 })
	c := gatewaytest.ConnectWS(t, g.URL, g.Token("bob"), gatewaytest.WSOptions{})
	query := `subscription { syncEvents { type } }`
	for i := 1; i <= server.MaxSubscriptionsPerConnection+1; i++ {
		c.Write(map[string]any{"id": fmt.Sprint(i), "type": "subscribe", "payload": map[string]any{"query": query}})
	}
	// gqlgen starts the subscriptions concurrently, so which one is refused varies; exactly one
	// is, and it ends.
	m := c.Next()
	if !strings.Contains(fmt.Sprint(m["payload"]), "LIMIT_EXCEEDED") || !strings.Contains(fmt.Sprint(m["payload"]), "subscriptions") {
		t.Fatalf("%d subscriptions on one connection: %v, want a LIMIT_EXCEEDED error", server.MaxSubscriptionsPerConnection+1, m)
	}
	if done := c.Next(); done["type"] != "complete" || done["id"] != m["id"] {
		t.Fatalf("after the refusal: %v, want its complete", done)
	}
	// The bucket holds 12 tokens: 8 went to the subscriptions above, 1 to the refused one.
	var codes []string
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("q%d", i)
		c.Write(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
		m := c.Next()
		codes = append(codes, fmt.Sprint(m["type"]))
		if m["type"] == "next" && strings.Contains(fmt.Sprint(m["payload"]), "LIMIT_EXCEEDED") {
			codes[len(codes)-1] = "limited"
		}
		if m["type"] == "next" {
			if done := c.Next(); done["type"] != "complete" {
				t.Fatalf("after the answer to %s: %v", id, done)
			}
		}
	}
	if strings.Join(codes, " ") != "next next next limited" {
		t.Errorf("queries over the WebSocket: %v, want three answers and then the rate limit", codes)
	}
}
