package sync_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
	"github.com/msggate/msggate/internal/testenv"
)

// Ensure a subscription outlives a Redis restart: a catch-up that finds Redis down is retried,
// and once Redis is back without the log the subscriber is told TOO_LONG instead of losing
// its stream.
func TestSubscriptionOutlivesRedisRestart(t *testing.T) {
	ctx := context.Background()
	store, err := chunkstore.Open(ctx, testenv.Mongo(t).Connect(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	rs := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	l := imsync.NewLedger(store, c, imsync.Options{})
	hub := imsync.NewHub(l, c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })

	conv, err := l.ParseConversationID("si_alice_bob")
	if err != nil {
		t.Fatal(err)
	}
	// The log exists, and the stream starts from its head.
	if err := l.AnnounceRevoke(ctx, conv, 1); err != nil {
		t.Fatal(err)
	}
	head, err := l.Difference(ctx, "bob", im.SyncToken{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := hub.Subscribe(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	events := make(chan im.Event, 16)
	ended := make(chan error, 1)
	go func() {
		ended <- sub.Run(&head.Token, func(ctx context.Context, ev im.Event) error {
			events <- ev
			return nil
		})
	}()
	next := func(what string) im.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case err := <-ended:
			t.Fatalf("%s: the subscription ended: %v", what, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no event in 20s", what)
		}
		return im.Event{}
	}
	if err := l.AnnounceRevoke(ctx, conv, 2); err != nil {
		t.Fatal(err)
	}
	if ev := next("before the restart"); ev.Type != im.EventRevoke || ev.Seq != 2 {
		t.Fatalf("before the restart: %+v, want the revoke", ev)
	}

	rs.Stop()
	// The hint makes the subscription read the log while Redis is down.
	hub.Hint("bob")
	select {
	case err := <-ended:
		t.Fatalf("the subscription ended while Redis was down: %v", err)
	case ev := <-events:
		t.Fatalf("while Redis was down: %+v, want nothing", ev)
	case <-time.After(500 * time.Millisecond):
	}
	rs.Start()
	if ev := next("after the restart"); ev.Type != im.EventTooLong {
		t.Fatalf("after Redis came back without the log: %+v, want TOO_LONG", ev)
	}
	// TOO_LONG ends the stream: the client starts again from the state summary.
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the subscription ended with %v after TOO_LONG, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription did not end after TOO_LONG")
	}
}
