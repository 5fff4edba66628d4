package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// historyReader reads one conversation's last 100 messages as token's user.
func historyReader(w *openIMWithFeed, token, conv string) func() []message {
	const page = `query($id: ID!) { conversation(id: $id) { history(limit: 100) { messages { seq status } } } }`
	return func() []message {
		var out struct {
			Conversation conversation `json:"conversation"`
		}
		w.Query(token, page, map[string]any{"id": conv}, &out)
		return out.Conversation.History.Messages
	}
}

// untilFollowed pushes a record of a message OpenIM stored until the device c hears of it: the
// feed's consumer group joins in the background, and a record produced before it reads is
// never delivered (a second copy adds nothing).
func untilFollowed(t *testing.T, w *openIMWithFeed, c *gatewaytest.WS, m *openimtest.MsgData, seq int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.push.PushMessage(context.Background(), pushed(m, seq), headers)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Read(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed delivered nothing within 30 s")
		}
	}
}

// Ensure that, with the feed, a warm history page of an OpenIM conversation is served from the
// instance's memory (no chunk read from msggate's Redis, no command to OpenIM's MongoDB) while
// the token's status is still read from OpenIM's Redis on every request; and that a revoke
// OpenIM made shows on the first read after its event reached a device.
func TestOpenIMWarmPageFromMemory(t *testing.T) {
	w := startOpenIMWithFeed(t)
	conv := openimtest.SingleConversationID("alice", "bob")
	msgs := texts("alice", "bob", "m", 150)
	seqs := w.IM.Send(conv, msgs...)
	w.IM.ToMongo(conv, msgs...)
	bob := w.IM.Login("bob", 2, 7)
	c := gatewaytest.ConnectWS(t, w.URL, bob, gatewaytest.WSOptions{})
	c.Subscribe(nil)
	untilFollowed(t, w, c, msgs[149], seqs[149])

	read := historyReader(w, bob, conv)
	for range 2 { // the first read fills msggate's Redis, the second the memory
		if got := read(); len(got) != 100 {
			t.Fatalf("%d messages, want 100", len(got))
		}
	}
	if w.ChunkMemory == nil {
		t.Fatal("with the feed, the instance keeps no chunks in memory")
	}
	hits := w.ChunkMemory.Stats().Hits
	w.Mongo.Reset()
	w.RoundTrips.Take()
	const reads = 3
	for range reads {
		if got := read(); len(got) != 100 || got[99].Seq != seqs[149] || got[99].Status != "OK" {
			t.Fatalf("warm page: %d messages, the last %+v", len(got), got[len(got)-1])
		}
	}
	trips := w.RoundTrips.Take()
	if n := testenv.Matching(trips, "hmget", ":chunk:"); n != 0 {
		t.Errorf("%d warm pages read chunks from msggate's Redis %d times, want none (the instance's memory)", reads, n)
	}
	if got := w.ChunkMemory.Stats().Hits - hits; got < 2*reads {
		t.Errorf("%d chunks served from memory for %d pages of two chunks", got, reads)
	}
	if n := w.Mongo.All(); len(n) != 0 {
		t.Errorf("warm pages sent %v to OpenIM's MongoDB, want nothing", n)
	}
	if n := testenv.Matching(trips, "hget", "UID_PID_TOKEN_STATUS:bob:Android"); n < reads {
		t.Errorf("the token's status was read %d times for %d requests, want every time", n, reads)
	}

	w.IM.Revoke(conv, seqs[149], openimtest.Revoke{UserID: "alice"})
	w.push.PushNotification(context.Background(), openimfeedtest.Revoke("alice", pushed(msgs[149], seqs[149]), conv, seqs[149], 1), headers)
	for ev := nextEvent(t, c, 5*time.Second); ev.Type != model.SyncEventTypeRevoke; ev = nextEvent(t, c, 5*time.Second) {
	}
	if got := read(); got[99].Status != "REVOKED" {
		t.Errorf("seq %d on the first read after its REVOKE event: %s, want REVOKED", seqs[149], got[99].Status)
	}
}

// Ensure a change OpenIM makes with no record at all (a revoke whose record was lost) shows
// within gateway.OpenIMChunkTTL to a client that reads the page all along, the instance
// keeping its chunks in Redis and in memory.
func TestOpenIMChangeWithoutRecordShowsWithinChunkTTL(t *testing.T) {
	w := startOpenIMWithFeed(t)
	conv := openimtest.SingleConversationID("alice", "bob")
	msgs := texts("alice", "bob", "m", 3)
	w.IM.Send(conv, msgs...)
	w.IM.ToMongo(conv, msgs...)
	bob := w.IM.Login("bob", 2, 7)
	read := historyReader(w, bob, conv)
	for range 2 {
		if got := read(); len(got) != 3 || got[2].Status != "OK" {
			t.Fatalf("before the revoke: %+v", got)
		}
	}
	revoked := time.Now()
	w.IM.Revoke(conv, 3, openimtest.Revoke{UserID: "alice"})
	gatewaytest.WaitFor(t, gateway.OpenIMChunkTTL+5*time.Second, "the revoke shows", func() bool {
		time.Sleep(50 * time.Millisecond)
		return read()[2].Status == "REVOKED"
	})
	if d := time.Since(revoked); d > gateway.OpenIMChunkTTL+time.Second {
		t.Errorf("the revoke showed %s after OpenIM made it, want within %s", d, gateway.OpenIMChunkTTL)
	}
}

// Ensure that with the feed an OpenIM token accepted before is refused on the next request once
// OpenIM kicks it or drops it (logout), over HTTP.
func TestOpenIMWithdrawnTokenRefusedOnNextRequestWithFeed(t *testing.T) {
	w := startOpenIMWithFeed(t)
	kicked, loggedOut := w.IM.Login("bob", 1, 7), w.IM.Login("bob", 3, 7)
	const viewerQuery = `{ viewer { userID } }`
	for _, tok := range []string{kicked, loggedOut} {
		for range 3 {
			if r := post(w.OpenIMGateway, bearer(tok), viewerQuery, nil); len(r.Errors) > 0 {
				t.Fatalf("a good token: %+v", r.Errors)
			}
		}
	}
	w.IM.SetTokenStatus("bob", 1, kicked, openimtest.TokenKicked)
	w.IM.DropTokens("bob", 3)
	for name, tok := range map[string]string{"kicked": kicked, "logged out": loggedOut} {
		if code := errorCode(w.OpenIMGateway, bearer(tok), viewerQuery, nil); code != "UNAUTHENTICATED" {
			t.Errorf("%s: %s on the next request, want UNAUTHENTICATED", name, code)
		}
	}
}
