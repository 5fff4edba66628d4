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
	ctx := context.Background()
	mongo := &testenv.MongoCommands{}
	store, err := chunkstore.Open(ctx, testenv.Mongo(t).Connect(t, mongo.Monitor()))
	if err != nil {
		t.Fatal(err)
	}
	rs := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	trips := &testenv.RedisRoundTrips{}
	rdb.AddHook(trips)
	c := cache.New(rdb, cache.Options{})
	l := imsync.NewLedger(store, c, imsync.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })

	const users, perUser = 40, 2
	members := make([]im.GroupMember, users)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("s%03d", i), Role: im.RoleMember}
	}
	members[0].Role = im.RoleOwner
	if err := l.SetGroup(ctx, "storm", members); err != nil {
		t.Fatal(err)
	}
	type got struct {
		device int
		ev     im.Event
	}
	events := make(chan got, 4*users*perUser)
	// storm subscribes every device at once and returns once all stream live.
	storm := func() []*imsync.Subscription {
		t.Helper()
		subs := make([]*imsync.Subscription, users*perUser)
		var wg gosync.WaitGroup
		for i := range subs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sub, err := hub.Subscribe(ctx, members[i%users].UserID)
				if err != nil {
					t.Error(err)
					return
				}
				subs[i] = sub
				go func() {
					_ = sub.Run(nil, func(ctx context.Context, ev im.Event) error {
						events <- got{i, ev}
						return nil
					})
				}()
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for deadline := time.Now().Add(time.Minute); hub.LiveSubscribers() < len(subs); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d subscriptions live after a minute", hub.LiveSubscribers(), len(subs))
			}
		}
		return subs
	}
	// The devices connected once: Redis knows their users' lists and states.
	for _, s := range storm() {
		s.Close()
	}
	for deadline := time.Now().Add(20 * time.Second); hub.LiveSubscribers() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions still live after they were closed", hub.LiveSubscribers())
		}
	}
	mongo.Reset()
	trips.Take()

	subs := storm()
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	if n := mongo.Total(); n != 0 {
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

	msg := imsync.StoredMessage{ConversationID: "sg_storm", Seq: 1, SendID: members[0].UserID, SendTime: time.Now().UnixMilli()}
	if err := l.RecordStored(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	if err := l.Events().AnnounceMessages(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for len(seen) < len(subs) {
		select {
		case g := <-events:
			if g.ev.Type != im.EventNewMessage || g.ev.ConversationID != "sg_storm" || g.ev.Seq != 1 {
				continue // an event of the first storm's
			}
			if seen[g.device] {
				t.Fatalf("device %d got the message twice", g.device)
			}
			seen[g.device] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d devices got the message", len(seen), len(subs))
		}
	}
}
