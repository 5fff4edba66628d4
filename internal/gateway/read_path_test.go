package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// Ensure messages() answers in request order across chunk boundaries, and that a range
// spanning two chunks costs one batch of MongoDB reads cold (on FerretDB, which scans for any
// $in, one find by _id per chunk, sent at once) and none warm.
func TestMessagesBySeq(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("alice", "bob", "", 250)
	alice := g.Token("alice")

	var out struct{ Messages []gatewaytest.Message }
	g.Query(alice, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 100, 101, 250}}, &out)
	if len(out.Messages) != 4 {
		t.Fatalf("got %d messages, want 4", len(out.Messages))
	}
	for i, want := range []int64{1, 100, 101, 250} {
		m := out.Messages[i]
		if m.Seq != want || m.Status != "OK" || m.Content == nil || *m.Content != fmt.Sprintf("m%d", want) {
			t.Errorf("message %d = %+v, want seq %d content m%d", i, m, want, want)
		}
	}

	var seqs []int64
	for s := int64(90); s <= 110; s++ {
		seqs = append(seqs, s)
	}
	if err := g.Redis.FlushAll(); err != nil { // cold cache
		t.Fatal(err)
	}
	g.Mongo.Reset()
	g.Query(alice, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": seqs}, &out)
	if len(out.Messages) != 21 || out.Messages[0].Seq != 90 || out.Messages[20].Seq != 110 {
		t.Fatalf("cold: got %d messages", len(out.Messages))
	}
	if n := g.Mongo.Count("msg", "find"); n != 2 {
		t.Errorf("cold cache: %d MongoDB chunk finds, want 2 (one per chunk)", n)
	}

	g.Mongo.Reset()
	g.RoundTrips.Take()
	g.Query(alice, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": seqs}, &out)
	if len(out.Messages) != 21 {
		t.Fatalf("warm: got %d messages", len(out.Messages))
	}
	if n := g.Mongo.Count("msg", "find"); n != 0 {
		t.Errorf("warm cache: %d MongoDB chunk queries, want 0", n)
	}
	if n := testenv.Matching(g.RoundTrips.Take(), "hmget", ":chunk:"); n != 1 {
		t.Errorf("warm cache: %d Redis chunk round trips, want 1", n)
	}
}

// Ensure a seq inside the conversation that holds no message (a hole, as an imported store
// may have) reads as a MISSING placeholder, in place, and seqs beyond the max seq are left out.
func TestMissingSeqIsPlaceholder(t *testing.T) {
	g := gatewaytest.Start(t)
	ctx := context.Background()
	conv := "si_alice_bob"
	var msgs []*im.Message
	for _, s := range []int64{1, 2, 3, 5} {
		msgs = append(msgs, &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: fmt.Sprint("c", s), Content: "x", Seq: s})
	}
	if _, err := g.Store.WriteMessages(ctx, conv, msgs); err != nil {
		t.Fatal(err)
	}
	if err := g.Store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv: {Seq: 5}}); err != nil {
		t.Fatal(err)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(g.Token("bob"), gatewaytest.MessagesQuery, map[string]any{"c": conv, "s": []int64{5, 4, 3, 6}}, &out)
	got := make([]string, len(out.Messages))
	for i, m := range out.Messages {
		got[i] = fmt.Sprintf("%d:%s", m.Seq, m.Status)
	}
	if strings.Join(got, " ") != "5:OK 4:MISSING 3:OK" {
		t.Fatalf("got %v, want [5:OK 4:MISSING 3:OK]", got)
	}
	if out.Messages[1].Content != nil || out.Messages[1].SendID != nil {
		t.Errorf("a placeholder carries no message: %+v", out.Messages[1])
	}
}

// Ensure one request reading history from 20 conversations costs one Redis round trip for
// chunks and, cold, one batch of chunk reads, and no chunk round trip once the instance holds
// the chunks in memory. (On FerretDB a batch is one find by _id per chunk, a few at once,
// since its $in decodes the whole collection: 20 finds here, whatever the store holds.)
func TestHistoryOfTwentyConversationsIsBatched(t *testing.T) {
	g := gatewaytest.Start(t)
	var q strings.Builder
	q.WriteString("{")
	for i := 0; i < 20; i++ {
		peer := fmt.Sprintf("u%02d", i)
		g.Send(peer, "alice", "", 3)
		fmt.Fprintf(&q, ` c%d: conversation(id: "si_alice_%s") { id unreadCount history(limit: 3) { messages { seq content status } } }`, i, peer)
	}
	q.WriteString("}")
	alice := g.Token("alice")
	check := func(phase string, wantMongo, wantChunkTrips int) (redisTrips int) {
		t.Helper()
		g.Mongo.Reset()
		g.RoundTrips.Take()
		var out map[string]struct {
			UnreadCount int64
			History     struct{ Messages []gatewaytest.Message }
		}
		g.Query(alice, q.String(), nil, &out)
		if len(out) != 20 {
			t.Fatalf("%s: %d conversations", phase, len(out))
		}
		for k, c := range out {
			if c.UnreadCount != 3 || len(c.History.Messages) != 3 || c.History.Messages[2].Seq != 3 || *c.History.Messages[2].Content != "m3" {
				t.Fatalf("%s: %s = %+v", phase, k, c)
			}
		}
		if n := g.Mongo.Count("msg", "find"); n != wantMongo {
			t.Errorf("%s: %d MongoDB chunk queries, want %d", phase, n, wantMongo)
		}
		trips := g.RoundTrips.Take()
		if n := testenv.Matching(trips, "hmget", ":chunk:"); n != wantChunkTrips {
			t.Errorf("%s: %d Redis round trips read chunks, want %d", phase, n, wantChunkTrips)
		}
		// The rate limiter's round trip, the instance's heartbeat (a SET of its instance key
		// each second, whenever it falls due) and its check of the store's identity (each
		// second too) are not the data's.
		return len(trips) - testenv.Matching(trips, ":rate") - testenv.Matching(trips, ":instance:") - testenv.Matching(trips, ":storeid")
	}
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	check("cold", 20, 1) // 20 chunks, one find by _id each on FerretDB
	// Warm, the data costs two Redis round trips: seq state, then chunks (the rate limiter's
	// own round trip comes on top).
	if trips := check("warm", 0, 1); trips != 2 {
		t.Errorf("warm: %d Redis round trips for data, want 2 (state, chunks)", trips)
	}
	// Hot, the chunks come from the instance's memory under the chunks versions the state read
	// names: an in-process hit counts as no round trip, so only the state's is left.
	if trips := check("hot", 0, 0); trips != 1 {
		t.Errorf("hot: %d Redis round trips for data, want 1 (state)", trips)
	}
}

// Ensure history pages backwards and forwards with exclusive bounds and correct hasMore flags.
func TestHistoryPaging(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("alice", "bob", "", 120)
	const q = `query($b: Int64, $a: Int64, $l: Int) { conversation(id: "si_alice_bob") {
		history(beforeSeq: $b, afterSeq: $a, limit: $l) { messages { seq } hasMoreBefore hasMoreAfter } } }`
	type page struct {
		Conversation struct {
			History struct {
				Messages                    []gatewaytest.Message
				HasMoreBefore, HasMoreAfter bool
			}
		}
	}
	for _, tc := range []struct {
		vars              map[string]any
		first, last       int64
		n                 int
		moreBefore, after bool
	}{
		{map[string]any{"l": 50}, 71, 120, 50, true, false},
		{map[string]any{"b": 71, "l": 50}, 21, 70, 50, true, true},
		{map[string]any{"b": 21, "l": 50}, 1, 20, 20, false, true},
		{map[string]any{"a": 100, "l": 10}, 101, 110, 10, true, true},
		{map[string]any{"a": 115}, 116, 120, 5, true, false},
	} {
		var p page
		g.Query(g.Token("bob"), q, tc.vars, &p)
		h := p.Conversation.History
		if len(h.Messages) != tc.n || h.Messages[0].Seq != tc.first || h.Messages[len(h.Messages)-1].Seq != tc.last ||
			h.HasMoreBefore != tc.moreBefore || h.HasMoreAfter != tc.after {
			t.Errorf("%v: got %d messages %d..%d before=%v after=%v", tc.vars, len(h.Messages),
				h.Messages[0].Seq, h.Messages[len(h.Messages)-1].Seq, h.HasMoreBefore, h.HasMoreAfter)
		}
	}
}
