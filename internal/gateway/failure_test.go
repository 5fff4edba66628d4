package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure a Redis outage makes reads go to MongoDB rather than fail, and that the gateway uses
// Redis again once it is back.
func TestRedisDownServesFromMongo(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	}
	g.Redis.Stop()
	c := g.Conversation(bob, "si_alice_bob")
	if c.MaxSeq != 3 || c.UnreadCount != 3 || c.LastMessage == nil || c.LastMessage.Seq != 3 {
		t.Fatalf("with Redis down: %+v", c)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3}}, &out)
	if len(out.Messages) != 3 || out.Messages[2].Status != "OK" {
		t.Fatalf("messages with Redis down: %+v", out.Messages)
	}
	// Sending needs the seq allocator in Redis: it fails clearly and stores nothing.
	if code := g.ErrorCode(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "y"}}); code != "UNAVAILABLE" {
		t.Errorf("send with Redis down: code %q, want UNAVAILABLE", code)
	}
	g.Redis.Start()
	// go-redis fails fast for a moment after a burst of dial errors; wait until it dials again.
	gatewaytest.WaitFor(t, 10*time.Second, "Redis is back but the gateway does not reach it", func() bool {
		return g.Cache.Ping(context.Background()) == nil
	})
	if m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "z"}); m.Seq != 4 {
		t.Errorf("first send after Redis came back (empty) got seq %d, want 4", m.Seq)
	}
}

// Ensure a MongoDB failure on a cold cache is an UNAVAILABLE error, never missing messages.
func TestMongoDownIsAnError(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := g.Store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		query string
		vars  map[string]any
	}{
		{gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1}}},
		{gatewaytest.ConversationQuery, map[string]any{"id": "si_alice_bob"}},
	} {
		r := g.Post(alice, q.query, q.vars)
		if len(r.Errors) == 0 {
			t.Fatalf("MongoDB down, cold cache: got data %s and no error", r.Data)
		}
		if code := r.Errors[0].Extensions["code"]; code != "UNAVAILABLE" {
			t.Errorf("code %v, want UNAVAILABLE (%s)", code, r.Errors[0].Message)
		}
	}
}
