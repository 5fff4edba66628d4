package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure the subscriptions of a reconnect storm (every device of a group's members starting
// at once without a token, as after a gateway restart) start from Redis alone while Redis
// knows the users: no MongoDB command at all, and a few Redis round trips a subscription
// whatever it follows; and that a message sent then reaches every subscription once.
func TestStormStartReadsOnlyRedis(t *testing.T) {
	r := newStormRig(t)
	trips := &testenv.RedisRoundTrips{}
	r.rdb.AddHook(trips)
	c := cache.New(r.rdb, cache.Options{})
	l := imsync.NewLedger(r.store, c, imsync.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })

	const users, perUser = 40, 2
	members := stormGroup(t, l, "storm", "s", users)
	events := make(chan deviceEvent, 4*users*perUser)
	// The devices connected once: Redis knows their users' lists and states.
	for _, s := range storm(t, hub, members, perUser, events) {
		s.Close()
	}
	for deadline := time.Now().Add(20 * time.Second); hub.LiveSubscribers() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions still live after they were closed", hub.LiveSubscribers())
		}
	}
	r.mongo.Reset()
	trips.Take()

	subs := storm(t, hub, members, perUser, events)
	if n := r.mongo.Total(); n != 0 {
		t.Errorf("the storm's start sent %d MongoDB commands, want none: Redis knows every user", n)
	}
	// A start reads the user's log head (Subscribe), list, the groups' heads and the member's
	// counters; the channels' subscriptions are not round trips of the client.
	const maxTrips = 4
	n := len(trips.Take())
	t.Logf("the storm's start: %d Redis round trips for %d subscriptions (%.1f each)", n, len(subs), float64(n)/float64(len(subs)))
	if n > maxTrips*len(subs) {
		t.Errorf("the storm's start took %d Redis round trips for %d subscriptions (%.1f each), want at most %d each",
			n, len(subs), float64(n)/float64(len(subs)), maxTrips)
	}

	sendToGroup(t, l, "sg_storm", members[0].UserID, 1)
	eachDeviceGetsOnce(t, events, len(subs), "sg_storm", 1)
}

// stormRig is what a storm test runs on: a store whose MongoDB commands mongo counts, and a
// redis-server of its own with a client on it.
type stormRig struct {
	store *chunkstore.Store
	mongo *testenv.MongoCommands
	rs    *testenv.RedisServer
	rdb   *redis.Client
}

func newStormRig(t *testing.T) *stormRig {
	t.Helper()
	r := &stormRig{mongo: &testenv.MongoCommands{}, rs: testenv.Redis(t)}
	var err error
	if r.store, err = chunkstore.Open(context.Background(), testenv.Mongo(t).Connect(t, r.mongo.Monitor())); err != nil {
		t.Fatal(err)
	}
	r.rdb = redis.NewClient(&redis.Options{Addr: r.rs.Addr()})
	t.Cleanup(func() { _ = r.rdb.Close() })
	return r
}

// stormGroup makes a group of users members (prefix000, prefix001, ...), the first its owner.
func stormGroup(t *testing.T, l *imsync.Ledger, group, prefix string, users int) []im.GroupMember {
	t.Helper()
	members := make([]im.GroupMember, users)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("%s%03d", prefix, i), Role: im.RoleMember}
	}
	members[0].Role = im.RoleOwner
	if err := l.SetGroup(context.Background(), group, members); err != nil {
		t.Fatal(err)
	}
	return members
}

// deviceEvent is an event one device of a storm got.
type deviceEvent struct {
	device int
	ev     im.Event
}

// storm subscribes perUser devices of every member at once, without a token, sends what each
// gets to events, and returns once all stream live. The test's end closes them.
func storm(t *testing.T, hub *imsync.Hub, members []im.GroupMember, perUser int, events chan<- deviceEvent) []*imsync.Subscription {
	t.Helper()
	subs := make([]*imsync.Subscription, len(members)*perUser)
	var wg gosync.WaitGroup
	for i := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, err := hub.Subscribe(context.Background(), members[i%len(members)].UserID)
			if err != nil {
				t.Error(err)
				return
			}
			subs[i] = sub
			go func() {
				_ = sub.Run(nil, func(ctx context.Context, ev im.Event) error {
					events <- deviceEvent{i, ev}
					return nil
				})
			}()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	for deadline := time.Now().Add(time.Minute); hub.LiveSubscribers() < len(subs); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscriptions live after a minute", hub.LiveSubscribers(), len(subs))
		}
	}
	return subs
}

// eachDeviceGetsOnce waits until each of devices got the message seq of conv, and fails if
// one gets it twice. Other events (an earlier storm's) are passed over.
func eachDeviceGetsOnce(t *testing.T, events <-chan deviceEvent, devices int, conv string, seq int64) {
	t.Helper()
	seen := map[int]bool{}
	for len(seen) < devices {
		select {
		case g := <-events:
			if g.ev.Type != im.EventNewMessage || g.ev.ConversationID != conv || g.ev.Seq != seq {
				continue
			}
			if seen[g.device] {
				t.Fatalf("device %d got the message twice", g.device)
			}
			seen[g.device] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d devices got the message", len(seen), devices)
		}
	}
}
