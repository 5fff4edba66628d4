package sync_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// testCheck is how often the hubs of these tests check memberships.
const testCheck = 200 * time.Millisecond

// received is one event a test's subscription got.
type received struct {
	user string
	ev   im.Event
}

// runSubscription subscribes user from now on and streams what they get into got.
func runSubscription(t *testing.T, hub *imsync.Hub, user string, got chan<- received) *imsync.Subscription {
	t.Helper()
	sub, err := hub.Subscribe(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	go func() {
		_ = sub.Run(nil, func(ctx context.Context, ev im.Event) error {
			select {
			case got <- received{user, ev}:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	}()
	return sub
}

// sendToGroup stores and announces the next message of a group conversation, as a send does.
func sendToGroup(t *testing.T, l *imsync.Ledger, conv, sender string, seq int64) {
	t.Helper()
	ctx := context.Background()
	msg := imsync.StoredMessage{ConversationID: conv, Seq: seq, SendID: sender, SendTime: time.Now().UnixMilli()}
	if err := l.RecordStored(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	if err := l.Events().AnnounceMessages(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
}

// waitLive waits until n subscriptions of hub stream live events: each follows, by then, the
// group streams its user's list named when it started.
func waitLive(t *testing.T, hub *imsync.Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for hub.LiveSubscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions stream live, want %d", hub.LiveSubscribers(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitChannelDropped waits until no Redis connection listens on a group stream's channel any
// more: a hub leaves it when the last of its subscriptions stops following the stream.
func waitChannelDropped(t *testing.T, rs *testenv.RedisServer, c *cache.Cache, conv string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		numsub, err := rdb.Do(context.Background(), "PUBSUB", "NUMSUB", c.GroupChannel(conv)).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if numsub[1].(int64) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v connections still listen on %s's channel", numsub[1], conv)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkingHub is a hub over l's events that checks its subscriptions' groups every testCheck,
// and a cache of its own on the same Redis (for what the test reads or writes beside l).
func checkingHub(t *testing.T, l *imsync.Ledger, rs *testenv.RedisServer) (*cache.Cache, *imsync.Hub) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{MembershipCheck: testCheck})
	t.Cleanup(func() { _ = hub.Close() })
	return c, hub
}

// Ensure a member removed from a group stops receiving its events within a few membership
// checks, with a LEAVE, even when the hint of the change was lost (its writer died before
// giving it), while the members who stay keep receiving them.
func TestRemovedMemberStopsReceivingWhenTheHintIsLost(t *testing.T) {
	ctx := context.Background()
	ledgers, store, rs := newLedgers(t, 1)
	l := ledgers[0]
	c, hub := checkingHub(t, l, rs)
	// A writer that dies after changing the members, before telling their devices.
	dying := imsync.NewLedger(store, c, imsync.Options{Fault: func(step string) error {
		if step == "resync" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})

	crew := []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleMember}, {UserID: "carol", Role: im.RoleMember}}
	if err := l.SetGroup(ctx, "crew", crew); err != nil {
		t.Fatal(err)
	}
	got := make(chan received, 64)
	alice := runSubscription(t, hub, "alice", got)
	runSubscription(t, hub, "bob", got)
	waitLive(t, hub, 2)
	sendToGroup(t, l, "sg_crew", "alice", 1)
	for seen := map[string]bool{}; len(seen) < 2; {
		select {
		case r := <-got:
			if r.ev.Type == im.EventNewMessage && r.ev.Seq == 1 {
				seen[r.user] = true
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the first message reached %v, want alice and bob", seen)
		}
	}

	if err := dying.SetGroup(ctx, "crew", []im.GroupMember{crew[0], crew[2]}); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("the dying writer's change: %v, want it stopped before the hint", err)
	}
	// Bob learns he left within a few checks, without any hint.
	bound := time.After(10 * testCheck)
	for left := false; !left; {
		select {
		case r := <-got:
			left = r.user == "bob" && r.ev.Type == im.EventLeave && r.ev.Stream == "sg_crew"
		case <-bound:
			t.Fatalf("bob got no LEAVE of sg_crew within %v of his removal", 10*testCheck)
		}
	}
	sendToGroup(t, l, "sg_crew", "alice", 2)
	deadline := time.After(time.Second)
	for aliceGot := false; ; {
		select {
		case r := <-got:
			// The group has two streams, its chat and its notifications, and each check
			// may tell bob he left either of them, in either order; nothing else reaches him.
			if r.user == "bob" && !(r.ev.Type == im.EventLeave && (r.ev.Stream == "sg_crew" || r.ev.Stream == "n_sg_crew")) {
				t.Fatalf("bob, removed, got %+v", r.ev)
			}
			aliceGot = aliceGot || r.ev.Type == im.EventNewMessage && r.ev.Seq == 2
			continue
		case <-deadline:
			if !aliceGot {
				t.Fatal("alice, still a member, did not get the second message")
			}
		}
		break
	}
	// Bob's subscription stays open; once alice's ends, nothing here follows the group.
	alice.Close()
	waitChannelDropped(t, rs, c, "sg_crew")
}

// Ensure the membership check costs Redis one GET per subscribed user while nothing changes:
// no conversation list is read again (so no MongoDB query either), and nothing grows with the
// size of the users' group.
func TestMembershipCheckReadsNoListWhileNothingChanges(t *testing.T) {
	ctx := context.Background()
	ledgers, _, rs := newLedgers(t, 1)
	l := ledgers[0]
	c, hub := checkingHub(t, l, rs)
	const n = 60
	members := make([]im.GroupMember, n)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("u%03d", i), Role: im.RoleMember}
	}
	if err := l.SetGroup(ctx, "big", members); err != nil {
		t.Fatal(err)
	}
	got := make(chan received, 4*n)
	for _, m := range members {
		runSubscription(t, hub, m.UserID, got)
	}
	waitLive(t, hub, n)
	time.Sleep(3 * testCheck) // every user's first check, which reads their list
	before, err := c.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(5 * testCheck)
	after, err := c.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checks := int64(time.Since(start)/testCheck) + 1
	if d := after.CommandCalls["smembers"] - before.CommandCalls["smembers"]; d != 0 {
		t.Errorf("idle checks read %d conversation lists, want none", d)
	}
	if d := after.CommandCalls["get"] - before.CommandCalls["get"]; d > checks*n {
		t.Errorf("%d idle checks of %d users cost %d GETs, want at most one per user per check", checks, n, d)
	}
	select {
	case r := <-got:
		t.Errorf("%s got %+v while nothing changed", r.user, r.ev)
	default:
	}
}
