package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

func newMessage(user, conv string, seq int64, readSeq int64) cache.EventAppend {
	return cache.EventAppend{UserID: user,
		Event:  im.Event{Type: im.EventNewMessage, Time: time.Now().UnixMilli(), ConversationID: conv, Seq: seq, SendID: "alice"},
		MaxSeq: seq, ReadSeq: readSeq}
}

func appendEvents(t *testing.T, c *cache.Cache, appends ...cache.EventAppend) []im.Event {
	t.Helper()
	evs, err := c.AppendEvents(context.Background(), appends)
	if err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	return evs
}

// Ensure events get dense positions per user, counters computed from everything the log has
// seen (a stale read seq never lowers the read position), and one round trip per batch.
func TestEventLogPositionsAndCounters(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		c := e.cache
		evs := appendEvents(t, c, newMessage("bob", "si_alice_bob", 1, 0), newMessage("bob", "si_alice_bob", 2, 0),
			newMessage("carol", "sg_g", 1, 0), newMessage("bob", "si_alice_bob", 3, 0))
		e.roundTrips(t, "append for two users", 1)
		for i, want := range []struct{ pos, unread int64 }{{1, 1}, {2, 2}, {1, 1}, {3, 3}} {
			if evs[i].Position != want.pos || evs[i].Unread != want.unread {
				t.Errorf("event %d: position %d unread %d, want %d and %d", i, evs[i].Position, evs[i].Unread, want.pos, want.unread)
			}
		}
		if evs[0].Epoch == "" || evs[0].Epoch != evs[1].Epoch || evs[0].Epoch == evs[2].Epoch {
			t.Errorf("epochs: bob %q %q, carol %q: want one per user", evs[0].Epoch, evs[1].Epoch, evs[2].Epoch)
		}
		read := appendEvents(t, c, cache.EventAppend{UserID: "bob",
			Event:  im.Event{Type: im.EventRead, ConversationID: "si_alice_bob"},
			MaxSeq: 3, ReadSeq: 2})[0]
		if read.ReadSeq != 2 || read.Unread != 1 || read.MaxSeq != 3 || read.MinSeq != 1 {
			t.Errorf("READ: %+v, want readSeq 2, unread 1, maxSeq 3, minSeq 1", read)
		}
		// A late NEW_MESSAGE computed from an older read seq must not move it back.
		late := appendEvents(t, c, newMessage("bob", "si_alice_bob", 4, 1))[0]
		if late.ReadSeq != 2 || late.Unread != 2 || late.MaxSeq != 4 {
			t.Errorf("late NEW_MESSAGE: %+v, want readSeq 2, unread 2, maxSeq 4", late)
		}
		clear := appendEvents(t, c, cache.EventAppend{UserID: "bob",
			Event:  im.Event{Type: im.EventClear, ConversationID: "si_alice_bob"},
			MaxSeq: 4, ReadSeq: 2, UserMinSeq: 5})[0]
		if clear.MinSeq != 5 || clear.Unread != 0 {
			t.Errorf("CLEAR: %+v, want minSeq 5 and unread 0", clear)
		}
		revoke := appendEvents(t, c, cache.EventAppend{UserID: "bob",
			Event: im.Event{Type: im.EventRevoke, ConversationID: "si_alice_bob", Seq: 4}})[0]
		if revoke.Position != 7 || revoke.Unread != 0 || revoke.Seq != 4 {
			t.Errorf("REVOKE: %+v, want position 7, seq 4, no counters", revoke)
		}
	})
}

// Ensure the event log raises the read state the state reads see, and that its "not known"
// zeros never make a read state look cached: only a fill from MongoDB (RaiseStates) completes
// an entry whose min seq the log never learned.
func TestEventLogSharesReadState(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		c := e.cache
		userState := func() cache.UserState {
			t.Helper()
			_, users, err := getStates(e.ctx, c, "dave", []string{"si_alice_dave"})
			if err != nil {
				t.Fatal(err)
			}
			return users[0]
		}
		appendEvents(t, c, newMessage("dave", "si_alice_dave", 1, 0))
		if got := userState(); got.Cached {
			t.Fatalf("after a message with no read seq known: %+v, want a miss", got)
		}
		appendEvents(t, c, cache.EventAppend{UserID: "dave", Event: im.Event{Type: im.EventRead, ConversationID: "si_alice_dave"},
			MaxSeq: 1, ReadSeq: 1})
		if got := userState(); got.Cached {
			t.Fatalf("read seq known, user min seq not: %+v, want a miss", got)
		}
		if err := c.RaiseStates(e.ctx, nil, []cache.UserRaise{{UserID: "dave", ConversationID: "si_alice_dave", ReadSeq: ptr(0), UserMinSeq: ptr(0)}}); err != nil {
			t.Fatal(err)
		}
		if got, want := userState(), (cache.UserState{ReadSeq: 1, UserMinSeq: 0, Cached: true}); got != want {
			t.Fatalf("after a fill: %+v, want %+v (the log's read seq kept)", got, want)
		}
		appendEvents(t, c, cache.EventAppend{UserID: "dave", Event: im.Event{Type: im.EventClear, ConversationID: "si_alice_dave"},
			MaxSeq: 1, ReadSeq: 1, UserMinSeq: 2})
		if got, want := userState(), (cache.UserState{ReadSeq: 1, UserMinSeq: 2, Cached: true}); got != want {
			t.Fatalf("after a clear: %+v, want %+v", got, want)
		}
	})
}

// Ensure a difference pages through the log in order, a token older than the log or from a
// lost log answers TooLong, and a token from the future is refused.
func TestEventLogDifference(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		c := cache.New(e.rdb, cache.Options{Prefix: "t:", EventLogMaxLen: 5})
		ctx := context.Background()
		head, err := c.EventHead(ctx, "bob")
		if err != nil || head.Position != 0 || head.Epoch == "" {
			t.Fatalf("head of a new log: %v %v", head, err)
		}
		var appends []cache.EventAppend
		for seq := int64(1); seq <= 8; seq++ {
			appends = append(appends, newMessage("bob", "si_alice_bob", seq, 0))
		}
		evs := appendEvents(t, c, appends...)
		if evs[0].Epoch != head.Epoch {
			t.Fatalf("the log changed epoch: %q then %q", head.Epoch, evs[0].Epoch)
		}
		page, err := c.ReadEvents(ctx, "bob", evs[2].Cursor(), 2)
		if err != nil || page.TooLong || len(page.Events) != 2 || page.Events[0].Position != 4 || page.Events[1].Seq != 5 {
			t.Fatalf("page after position 3: %+v %v", page, err)
		}
		if page.Head.Position != 8 {
			t.Errorf("head %d, want 8", page.Head.Position)
		}
		// The log keeps 5 events (4..8): a token at 2 cannot be served, a token at 3 can.
		if page, err := c.ReadEvents(ctx, "bob", evs[1].Cursor(), 10); err != nil || !page.TooLong || len(page.Events) != 0 {
			t.Errorf("token older than the log: %+v %v, want TooLong", page, err)
		}
		if _, err := c.ReadEvents(ctx, "bob", im.Cursor{Epoch: head.Epoch, Position: 9}, 10); !errors.Is(err, cache.ErrFutureToken) {
			t.Errorf("token ahead of the log: %v, want ErrFutureToken", err)
		}
		e.flushAll(t)
		if page, err := c.ReadEvents(ctx, "bob", evs[7].Cursor(), 10); err != nil || !page.TooLong || page.Head.Epoch == head.Epoch {
			t.Errorf("token of a lost log: %+v %v, want TooLong and a new epoch", page, err)
		}
	})
}

// Ensure a feed delivers the events of subscribed users only, in order, and stops after
// Unsubscribe.
func TestEventFeed(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		testFeed(t, e.cache)
	})
}

// The embedded default (miniredis) must run the scripts and pub/sub as well.
func TestEventLogOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	evs := appendEvents(t, c, newMessage("bob", "si_alice_bob", 1, 0), newMessage("bob", "si_alice_bob", 2, 1))
	if evs[1].Position != 2 || evs[1].Unread != 1 {
		t.Fatalf("events: %+v", evs)
	}
	testFeed(t, c)
}

func testFeed(t *testing.T, c *cache.Cache) {
	type delivery struct {
		user, group string
		ev          *im.Event
	}
	got := make(chan delivery, 100)
	feed := c.OpenEventFeed(func(user, group string, ev *im.Event) { got <- delivery{user, group, ev} })
	defer func() { _ = feed.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := feed.Subscribe(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	sent := appendEvents(t, c, newMessage("erin", "si_dave_erin", 1, 0), newMessage("dave", "si_dave_erin", 1, 0),
		newMessage("dave", "si_dave_erin", 2, 0))
	for _, want := range sent[1:] {
		select {
		case d := <-got:
			if d.user != "dave" || d.ev == nil || d.ev.Position != want.Position || d.ev.Seq != want.Seq {
				t.Fatalf("delivered %s %+v, want dave's %+v", d.user, d.ev, want)
			}
		case <-ctx.Done():
			t.Fatalf("event at position %d not delivered", want.Position)
		}
	}
	if err := feed.Unsubscribe(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	// Subscribing to someone else and seeing their event proves dave's unsubscribe took
	// effect before it (one connection, in order).
	if err := feed.Subscribe(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, c, newMessage("dave", "si_dave_erin", 3, 0), newMessage("erin", "si_dave_erin", 3, 0))
	select {
	case d := <-got:
		if d.user != "erin" {
			t.Fatalf("delivered %s's event after unsubscribing", d.user)
		}
	case <-ctx.Done():
		t.Fatal("erin's event not delivered")
	}
	// A group stream's event comes once, on the group's channel, named by its stream.
	if err := feed.SubscribeGroup(ctx, "sg_team"); err != nil {
		t.Fatal(err)
	}
	gev, err := c.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: im.Event{Type: im.EventNewMessage, ConversationID: "sg_team", Seq: 1, SendID: "erin", Time: time.Now().UnixMilli()}, MaxSeq: 1}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.group != "sg_team" || d.user != "" || d.ev == nil || d.ev.Stream != "sg_team" || d.ev.Position != gev[0].Position || d.ev.MaxSeq != 1 {
			t.Fatalf("delivered user %q group %q %+v, want the group's %+v", d.user, d.group, d.ev, gev[0])
		}
	case <-ctx.Done():
		t.Fatal("the group's event not delivered")
	}
	// A resync reaches the user's subscribers as a nil event: re-read.
	if err := c.Resync(ctx, []string{"erin"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.user != "erin" || d.ev != nil {
			t.Fatalf("resync delivered %q %+v, want erin's nil", d.user, d.ev)
		}
	case <-ctx.Done():
		t.Fatal("the resync was not delivered")
	}
}

// TestGroupStream: a group's events are logged once with the conversation's counters, dense
// and deduplicated by key, and read after a cursor like a user's log.
func TestGroupStream(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) { testGroupStream(t, e.cache) })
}

func testGroupStream(t *testing.T, c *cache.Cache) {
	ctx := context.Background()
	heads, err := c.ReadGroupEvents(ctx, []cache.GroupRead{{ConversationID: "sg_g1"}})
	if err != nil || heads[0].Head.Position != 0 || heads[0].Head.Epoch == "" {
		t.Fatalf("head of a new stream: %+v, %v", heads, err)
	}
	msg := func(seq int64) cache.GroupAppend {
		return cache.GroupAppend{Event: im.Event{Type: im.EventNewMessage, ConversationID: "sg_g1", Seq: seq, Time: time.Now().UnixMilli()},
			MaxSeq: seq, Key: fmt.Sprintf("m:sg_g1:%d", seq)}
	}
	evs, err := c.AppendGroupEvents(ctx, []cache.GroupAppend{msg(1), msg(2), msg(1),
		{Event: im.Event{Type: im.EventRevoke, ConversationID: "sg_g1", Seq: 1, Time: time.Now().UnixMilli()}, Key: "r:sg_g1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Position != 1 || evs[1].Position != 2 || evs[2].Position != 0 || evs[3].Position != 3 || evs[1].MaxSeq != 2 || evs[0].Stream != "sg_g1" {
		t.Fatalf("appended %+v", evs)
	}
	if evs[0].Epoch != heads[0].Head.Epoch {
		t.Fatalf("the stream's epoch changed from %s to %s", heads[0].Head.Epoch, evs[0].Epoch)
	}
	since := evs[0].Cursor()
	pages, err := c.ReadGroupEvents(ctx, []cache.GroupRead{{ConversationID: "sg_g1", Since: &since, Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	p := pages[0]
	if p.TooLong || len(p.Events) != 2 || p.Events[0].Seq != 2 || p.Events[1].Type != im.EventRevoke || p.Head.Position != 3 || p.Events[0].Stream != "sg_g1" {
		t.Fatalf("read after %v: %+v", since, p)
	}
	lost := im.Cursor{Epoch: "gone", Position: 1}
	if pages, err = c.ReadGroupEvents(ctx, []cache.GroupRead{{ConversationID: "sg_g1", Since: &lost, Limit: 10}}); err != nil || !pages[0].TooLong {
		t.Fatalf("read with another epoch's cursor: %+v, %v", pages, err)
	}
}

// Ensure a log created by a read (a device's first syncState) expires like one created by an
// append, every read renews it, and a new log starts without events left from a lost one.
func TestEventLogExpires(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		const age = time.Hour
		c := cache.New(e.rdb, cache.Options{Prefix: "t:", EventLogMaxAge: age})
		ctx := context.Background()
		ttl := func(key string) time.Duration {
			t.Helper()
			d, err := e.rdb.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		head, err := c.EventHead(ctx, "bob")
		if err != nil {
			t.Fatal(err)
		}
		if d := ttl("t:{u:bob}:log"); d <= age-time.Minute || d > age {
			t.Fatalf("a log created by a read lives %v, want about %v", d, age)
		}
		if err := e.rdb.PExpire(ctx, "t:{u:bob}:log", time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReadEvents(ctx, "bob", head, 10); err != nil {
			t.Fatal(err)
		}
		if d := ttl("t:{u:bob}:log"); d <= age-time.Minute {
			t.Fatalf("after a read the log lives %v, want about %v", d, age)
		}
		appendEvents(t, c, newMessage("bob", "si_alice_bob", 1, 0))
		for _, k := range []string{"t:{u:bob}:log", "t:{u:bob}:events"} {
			if d := ttl(k); d <= age-time.Minute || d > age {
				t.Errorf("%s lives %v after an append, want about %v", k, d, age)
			}
		}

		// The head is gone but the list is not (evicted first, say): the new epoch's log must
		// not serve the old epoch's events.
		if err := e.rdb.Del(ctx, "t:{u:bob}:log").Err(); err != nil {
			t.Fatal(err)
		}
		fresh, err := c.EventHead(ctx, "bob")
		if err != nil || fresh.Epoch == head.Epoch || fresh.Position != 0 {
			t.Fatalf("head after losing it: %v %v, want a new epoch at 0", fresh, err)
		}
		if n := e.rdb.Exists(ctx, "t:{u:bob}:events").Val(); n != 0 {
			t.Errorf("the new log kept the lost log's events")
		}
	})
}

// Ensure an event whose key the log has seen is left out (answered as the zero Event) without
// taking a position, in the same batch and in a later one, while events without a key and
// with other keys are appended as usual; and that a new log forgets the keys of the lost one.
func TestEventLogKeysLeaveOutRepeats(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		c := e.cache
		keyed := func(seq int64, key string) cache.EventAppend {
			a := newMessage("bob", "si_alice_bob", seq, 0)
			a.Key = key
			return a
		}
		evs := appendEvents(t, c, keyed(1, "m:1"), keyed(1, "m:1"), keyed(2, "m:2"), keyed(3, ""))
		if evs[0].Position != 1 || evs[1].Position != 0 || evs[2].Position != 2 || evs[3].Position != 3 {
			t.Fatalf("positions %d %d %d %d, want 1, left out, 2, 3", evs[0].Position, evs[1].Position, evs[2].Position, evs[3].Position)
		}
		again := appendEvents(t, c, keyed(2, "m:2"), keyed(4, "m:4"))
		if again[0].Position != 0 || again[1].Position != 4 {
			t.Fatalf("a repeat in a later batch: positions %d and %d, want left out and 4", again[0].Position, again[1].Position)
		}
		page, err := c.ReadEvents(context.Background(), "bob", im.Cursor{Epoch: evs[0].Epoch}, 100)
		if err != nil || len(page.Events) != 4 {
			t.Fatalf("the log holds %d events (%v), want 4", len(page.Events), err)
		}
		// The head expires (or is evicted) before the keys: the log starts a new epoch.
		if err := e.rdb.Del(e.ctx, "t:{u:bob}:log").Err(); err != nil {
			t.Fatal(err)
		}
		if fresh := appendEvents(t, c, keyed(2, "m:2"))[0]; fresh.Position != 1 {
			t.Fatalf("a new log left out a key of the lost one: %+v", fresh)
		}
	})
}
