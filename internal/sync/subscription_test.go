package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
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
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })

	conv, err := l.ParseConversationID("si_alice_bob")
	if err != nil {
		t.Fatal(err)
	}
	// The log exists, and the stream starts from its head.
	if err := l.Events().AnnounceRevoke(ctx, conv, 1); err != nil {
		t.Fatal(err)
	}
	head, err := l.Events().Difference(ctx, "bob", im.SyncToken{}, 1)
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
			// A stream that ends after its last event (TOO_LONG) has both ready, and select
			// picks either: the event delivered first is the one to see.
			select {
			case ev := <-events:
				ended <- err
				return ev
			default:
			}
			t.Fatalf("%s: the subscription ended: %v", what, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no event in 20s", what)
		}
		return im.Event{}
	}
	if err := l.Events().AnnounceRevoke(ctx, conv, 2); err != nil {
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

// Ensure a group's event reaches every subscribed member on an instance through one Redis
// channel subscription, with each member's own counters.
func TestHubFansOutGroupEventsInProcess(t *testing.T) {
	ctx := context.Background()
	ledgers, _, rs := newLedgers(t, 1)
	l := ledgers[0]
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })
	const n = 200
	members := make([]im.GroupMember, n)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("u%03d", i), Role: im.RoleMember}
	}
	if err := l.SetGroup(ctx, "many", members); err != nil {
		t.Fatal(err)
	}
	got := make(chan [2]any, 2*n)
	for _, m := range members {
		sub, err := hub.Subscribe(ctx, m.UserID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Close)
		go func() {
			_ = sub.Run(nil, func(ctx context.Context, ev im.Event) error {
				got <- [2]any{m.UserID, ev}
				return nil
			})
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for hub.LiveSubscribers() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscriptions stream live", hub.LiveSubscribers(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	numsub, err := rdb.Do(ctx, "PUBSUB", "NUMSUB", c.GroupChannel("sg_many")).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if numsub[1].(int64) != 1 {
		t.Errorf("the group's channel has %v Redis subscribers, want 1 (the hub's connection)", numsub[1])
	}
	msg := imsync.StoredMessage{ConversationID: "sg_many", Seq: 1, SendID: "u000", SendTime: time.Now().UnixMilli()}
	if err := l.RecordStored(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	if err := l.Events().AnnounceMessages(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case d := <-got:
			user, ev := d[0].(string), d[1].(im.Event)
			if ev.Type != im.EventNewMessage || ev.Stream != "sg_many" || ev.Seq != 1 {
				t.Fatalf("%s got %+v, want the group's message", user, ev)
			}
			if want := int64(1); user != "u000" && ev.Unread != want || user == "u000" && (ev.Unread != 0 || ev.ReadSeq != 1) {
				t.Errorf("%s's counters: %+v", user, ev)
			}
			if seen[user] {
				t.Fatalf("%s got the message twice", user)
			}
			seen[user] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d members got the message", len(seen), n)
		}
	}
}
