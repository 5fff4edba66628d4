package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// pageQuery asks for a conversation list page alone, without totalUnread (which reads the
// whole list, and the page with it).
const pageQuery = `query($first: Int, $after: String) { viewer {
	conversations(first: $first, after: $after) { nodes { id maxSeq readSeq unreadCount lastMessage { seq content } } pageInfo { endCursor hasNextPage } } } }`

// readPage reads one page of user's list on g, with pageQuery or (whole) gatewaytest.ViewerQuery.
func readPage(g *gatewaytest.Gateway, token string, whole bool, first int, after *string) gatewaytest.Viewer {
	g.T.Helper()
	vars := map[string]any{"first": first}
	if after != nil {
		vars["after"] = *after
	}
	q := pageQuery
	if whole {
		q = gatewaytest.ViewerQuery
	}
	var v gatewaytest.Viewer
	g.Query(token, q, vars, &v)
	return v
}

// listIDs walks the whole list in pages of size first and returns its conversations and
// their unread counts, failing on a page that repeats or skips one.
func listIDs(g *gatewaytest.Gateway, token string, whole bool, first int) []string {
	g.T.Helper()
	var out []string
	var after *string
	for range 100 {
		v := readPage(g, token, whole, first, after).Viewer.Conversations
		for _, n := range v.Nodes {
			out = append(out, fmt.Sprintf("%s:%d", n.ID, n.UnreadCount))
		}
		if !v.PageInfo.HasNextPage {
			return out
		}
		after = v.PageInfo.EndCursor
	}
	g.T.Fatal("the list never ended")
	return nil
}

// Ensure the list page, read from each user's order in Redis, answers what the whole list
// answers (the list as totalUnread reads it), in the same order and paged alike, across two
// instances: after sends that move a conversation forward, a group send (which writes to no
// member's order), reads, a group joined and left, and the order lost from Redis.
func TestConversationPageAcrossInstances(t *testing.T) {
	pair := gatewaytest.StartPair(t, nil)
	a, b := pair[0], pair[1]
	alice := a.Token("alice")
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli()
	at := 0
	send := func(from, to, group string) {
		t.Helper()
		at++
		msg := &im.Message{SendID: from, RecvID: to, GroupID: group, ContentType: 101, Content: fmt.Sprint("m", at), SendTime: base + int64(at)*1000}
		if _, err := a.Ingest.Ingest(context.Background(), []*im.Message{msg}); err != nil {
			t.Fatal(err)
		}
	}
	// Older chats than the test's, enough that the page is read from the order, not whole
	// (sync's shortList).
	for start := 0; start < 70; start += 10 {
		var msgs []*im.Message
		for i := start; i < start+10; i++ {
			msgs = append(msgs, &im.Message{SendID: fmt.Sprintf("old%02d", i), RecvID: "alice", ContentType: 101, Content: "old", SendTime: base - int64(i+1)*1000})
		}
		if _, err := a.Ingest.Ingest(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want ...string) {
		t.Helper()
		for _, first := range []int{2, 20} {
			page, whole := listIDs(b, alice, false, first), listIDs(b, alice, true, first)
			if !slices.Equal(page, whole) {
				t.Fatalf("%s, pages of %d: %v, the whole list %v", step, first, page, whole)
			}
			if len(page) != len(want)+70 || !slices.Equal(page[:len(want)], want) {
				t.Fatalf("%s, pages of %d: %v, want %v then 70 older", step, first, page, want)
			}
		}
	}
	send("bob", "alice", "")
	send("carol", "alice", "")
	check("first messages", "si_alice_carol:1", "si_alice_bob:1")
	send("bob", "alice", "")
	check("bob again", "si_alice_bob:2", "si_alice_carol:1")
	a.Query(a.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "alice"}, {"userID": "bob", "role": "OWNER"}}}, &struct{}{})
	send("bob", "", "team")
	check("a group send", "sg_team:1", "si_alice_bob:2", "si_alice_carol:1")
	a.Query(alice, `mutation { markConversationRead(conversationID: "si_alice_bob") { readSeq } }`, nil, &struct{}{})
	send("carol", "alice", "")
	check("bob's read, carol again", "si_alice_carol:2", "sg_team:1", "si_alice_bob:0")
	send("alice", "dave", "")
	check("a conversation alice starts", "si_alice_dave:0", "si_alice_carol:2", "sg_team:1", "si_alice_bob:0")
	a.Query(a.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "bob", "role": "OWNER"}}}, &struct{}{})
	check("team left", "si_alice_dave:0", "si_alice_carol:2", "si_alice_bob:0")
	rdb := redis.NewClient(&redis.Options{Addr: b.Redis.Addr()})
	defer rdb.Close()
	if err := rdb.Del(context.Background(), "msggate:{u:alice}:order").Err(); err != nil {
		t.Fatal(err)
	}
	send("bob", "alice", "")
	check("the order lost, then a send", "si_alice_bob:1", "si_alice_dave:0", "si_alice_carol:2")
}

// pageCost is what one list page cost: its Redis round trips, the commands in them, their
// arguments (keys and fields read), and its MongoDB commands.
type pageCost struct{ trips, commands, args, mongo int }

// Ensure a warm list page of a user with 2,000 conversations costs what the same page of a
// user with 100 costs: no MongoDB command, and as many Redis round trips (one), commands and
// keys read; both are in a group, placed among their chats. The first page and the next, by
// cursor.
func TestConversationPageDoesNotGrowWithTheList(t *testing.T) {
	var mu sync.Mutex
	var calls [][]cache.Call
	g := gatewaytest.StartObserved(t, gateway.Observers{OnRedisRoundTrip: func(c []cache.Call) {
		// The instance's own round trips (its heartbeat) name no user's or conversation's key;
		// the rate limiter's bucket is the request's, not the page's.
		if !slices.ContainsFunc(c, func(c cache.Call) bool { return strings.Contains(c.Key, "{") && !strings.HasSuffix(c.Key, ":rate") }) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	}}, nil)
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli()
	sizes := map[string]int{"small": 100, "big": 2000}
	for user, n := range sizes {
		// Batches of 20: FerretDB's bulk upserts slow down with the number of statements.
		for start := 0; start < n; start += 20 {
			var msgs []*im.Message
			for i := start; i < min(n, start+20); i++ {
				msgs = append(msgs, &im.Message{SendID: fmt.Sprintf("p%04d", i), RecvID: user, ContentType: 101,
					Content: "hello", SendTime: base + int64(i)*1000})
			}
			if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
				t.Fatal(err)
			}
		}
	}
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "small"}, {"userID": "big"}, {"userID": "p0000", "role": "OWNER"}}}, &struct{}{})
	// The group's message comes after the small user's 50 newest chats.
	group := &im.Message{SendID: "p0000", GroupID: "team", ContentType: 101, Content: "team", SendTime: base + 49*1000 + 500}
	if _, err := g.Ingest.Ingest(context.Background(), []*im.Message{group}); err != nil {
		t.Fatal(err)
	}

	cost := func(user string, after *string) (gatewaytest.Viewer, pageCost) {
		t.Helper()
		token := g.Token(user)
		// Warm: the first read fills the order from the whole list (and the seq states from
		// MongoDB, without chunks versions); the second finds everything cached.
		for range 2 {
			readPage(g, token, false, 20, after)
		}
		mu.Lock()
		calls = nil
		mu.Unlock()
		g.Mongo.Reset()
		v := readPage(g, token, false, 20, after)
		mu.Lock()
		defer mu.Unlock()
		c := pageCost{trips: len(calls)}
		for cmd, n := range g.Mongo.All() {
			if !strings.HasSuffix(cmd, " outbox") { // the relay's look for intents left, every second
				c.mongo += n
			}
		}
		for _, trip := range calls {
			c.commands += len(trip)
			for _, call := range trip {
				c.args += call.Args
			}
		}
		return v, c
	}
	for _, page := range []string{"first", "second"} {
		var small, big pageCost
		var bigPage gatewaytest.Viewer
		var after map[string]*string
		if page == "second" {
			after = map[string]*string{}
			for user := range sizes {
				after[user] = readPage(g, g.Token(user), false, 20, nil).Viewer.Conversations.PageInfo.EndCursor
			}
		}
		_, small = cost("small", after["small"])
		bigPage, big = cost("big", after["big"])
		t.Logf("%s page: 100 conversations %+v, 2,000 %+v", page, small, big)
		if big.mongo != 0 || small.mongo != 0 {
			t.Errorf("%s page: %d and %d MongoDB commands, want none", page, small.mongo, big.mongo)
		}
		if big.trips != small.trips || big.commands != small.commands || big.args != small.args {
			t.Errorf("%s page: 2,000 conversations cost %+v, 100 cost %+v: the page grows with the list", page, big, small)
		}
		if big.trips != 1 {
			t.Errorf("%s page: %d Redis round trips, want 1", page, big.trips)
		}
		nodes := bigPage.Viewer.Conversations.Nodes
		newest := 1999
		if page == "second" {
			newest = 1999 - 20
		}
		if len(nodes) != 20 || nodes[0].ID != fmt.Sprintf("si_big_p%04d", newest) || !bigPage.Viewer.Conversations.PageInfo.HasNextPage {
			t.Fatalf("%s page of the big user: %+v", page, bigPage.Viewer.Conversations)
		}
	}
	// The group is placed by its newest message among the small user's chats.
	ids := listIDs(g, g.Token("small"), false, 20)
	if i := slices.Index(ids, "sg_team:1"); i != 50 || len(ids) != 101 {
		t.Errorf("the group is at %d of %d, want 50 of 101: %v", i, len(ids), ids)
	}
}
