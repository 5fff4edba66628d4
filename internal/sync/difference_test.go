package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure a difference pages through the user's log and several group streams with a small
// limit, each event once and each stream's positions dense, with counters for the member, and
// ends at the head.
func TestDifferencePagesAcrossStreams(t *testing.T) {
	ledgers, _, _ := newLedgers(t, 1)
	l := ledgers[0]
	ctx := context.Background()
	if err := l.SetGroup(ctx, "g1", []im.GroupMember{{UserID: "u", Role: im.RoleOwner}, {UserID: "v", Role: im.RoleMember}}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetGroup(ctx, "g2", []im.GroupMember{{UserID: "u", Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	sum, err := l.Events().Summary(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Token.Groups) != 4 {
		t.Fatalf("summary token %s follows %d group streams, want 4 (chat and notifications of 2 groups)", sum.Token, len(sum.Token.Groups))
	}
	var msgs []imsync.StoredMessage
	now := time.Now().UnixMilli()
	for seq := int64(1); seq <= 5; seq++ {
		msgs = append(msgs, imsync.StoredMessage{ConversationID: "sg_g1", Seq: seq, SendID: "v", SendTime: now})
	}
	for seq := int64(1); seq <= 4; seq++ {
		msgs = append(msgs, imsync.StoredMessage{ConversationID: "sg_g2", Seq: seq, SendID: "u", SendTime: now})
	}
	if err := l.RecordStored(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if err := l.Events().AnnounceMessages(ctx, msgs); err != nil {
		t.Fatal(err)
	}

	tok := sum.Token
	last := map[string]im.Event{}
	pages := 0
	for more := true; more; pages++ {
		if pages > 10 {
			t.Fatal("the difference does not end")
		}
		d, err := l.Events().Difference(ctx, "u", tok, 3)
		if err != nil {
			t.Fatal(err)
		}
		if d.TooLong {
			t.Fatalf("difference since %s: too long", tok)
		}
		for _, ev := range d.Events {
			prev, ok := last[ev.Stream]
			if want := tok.Groups[ev.Stream].Position + 1; !ok && ev.Position != want {
				t.Fatalf("%s: first event at position %d, want %d", ev.Stream, ev.Position, want)
			}
			if ok && ev.Position != prev.Position+1 {
				t.Fatalf("%s: position %d after %d", ev.Stream, ev.Position, prev.Position)
			}
			last[ev.Stream] = ev
		}
		if len(d.Events) > 3 {
			t.Fatalf("a page of limit 3 holds %d events", len(d.Events))
		}
		tok, more = d.Token, d.HasMore
	}
	g1, g2 := last["sg_g1"], last["sg_g2"]
	if g1.Seq != 5 || g1.MaxSeq != 5 || g1.ReadSeq != 0 || g1.Unread != 5 || g1.MinSeq != 1 {
		t.Errorf("u's last event of sg_g1 (v sent all): %+v, want seq 5 with 5 unread", g1)
	}
	if g2.Seq != 4 || g2.ReadSeq != 4 || g2.Unread != 0 {
		t.Errorf("u's last event of sg_g2 (u sent all): %+v, want seq 4, read seq 4, nothing unread", g2)
	}
	head, err := l.Events().Head(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if tok.String() != head.String() {
		t.Errorf("after %d pages the token is %s, the head %s", pages, tok, head)
	}

	// u leaves g2; v's token of v's log alone (as earlier versions gave) joins g1.
	if err := l.SetGroup(ctx, "g2", []im.GroupMember{{UserID: "x", Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	d, err := l.Events().Difference(ctx, "u", tok, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(eventTypes(d.Events)); got != "[LEAVE n_sg_g2 LEAVE sg_g2]" || len(d.Token.Groups) != 2 {
		t.Errorf("after leaving g2: events %s, token %s", got, d.Token)
	}
	vHead, err := l.Events().Head(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	d, err = l.Events().Difference(ctx, "v", im.SyncToken{User: vHead.User}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if d.TooLong {
		t.Fatal("a token of the user's log alone: too long")
	}
	joined := false
	for _, ev := range d.Events {
		if ev.Type == im.EventJoin && ev.ConversationID == "sg_g1" {
			joined = true
			if ev.MaxSeq != 5 || ev.ReadSeq != 5 || ev.Unread != 0 || ev.Position != g1.Position {
				t.Errorf("v's JOIN of sg_g1: %+v, want max seq 5, read seq 5 (v sent them), at the head %d", ev, g1.Position)
			}
		}
	}
	if !joined {
		t.Errorf("v's difference from a token of v's log alone: %v, want a JOIN of sg_g1", eventTypes(d.Events))
	}
}

func eventTypes(evs []im.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type) + " " + ev.ConversationID
	}
	return out
}

// pageThrough follows user's difference from tok with limit until it has no more, and returns
// the events and the last token. Each page must hold at most limit events besides JOINs.
func pageThrough(t *testing.T, l *imsync.Ledger, user string, tok im.SyncToken, limit, maxPages int) ([]im.Event, im.SyncToken) {
	t.Helper()
	var all []im.Event
	for pages := 0; ; pages++ {
		if pages == maxPages {
			t.Fatalf("the difference did not end in %d pages of %d", maxPages, limit)
		}
		d, err := l.Events().Difference(context.Background(), user, tok, limit)
		if err != nil {
			t.Fatal(err)
		}
		if d.TooLong {
			t.Fatal("the difference answered too long")
		}
		counted := 0
		for _, ev := range d.Events {
			if ev.Type != im.EventJoin {
				counted++
			}
		}
		if counted > limit {
			t.Fatalf("page %d of limit %d holds %d events", pages, limit, counted)
		}
		all, tok = append(all, d.Events...), d.Token
		if !d.HasMore {
			return all, tok
		}
	}
}

// Ensure a token naming thousands of groups the user was never in (a client can write any)
// is answered in pages of limit events, its LEAVEs counted like any event, each once, and
// ends at the user's head; and that a user who really left many groups converges the same way.
func TestDifferenceCountsLeavesAgainstTheLimit(t *testing.T) {
	ledgers, _, _ := newLedgers(t, 1)
	l := ledgers[0]
	ctx := context.Background()
	owner := []im.GroupMember{{UserID: "u", Role: im.RoleOwner}}
	if err := l.SetGroup(ctx, "kept", owner); err != nil {
		t.Fatal(err)
	}

	t.Run("forged", func(t *testing.T) {
		head, err := l.Events().Head(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		forged := im.SyncToken{User: head.User, Groups: map[string]im.Cursor{}}
		for id, c := range head.Groups {
			forged.Groups[id] = c
		}
		const strangers = 2500
		for i := range strangers {
			forged.Groups[fmt.Sprintf("sg_f%05d", i)] = im.Cursor{Epoch: "1", Position: 7}
		}
		evs, tok := pageThrough(t, l, "u", forged, 100, strangers/100+2)
		left := map[string]int{}
		for _, ev := range evs {
			if ev.Type != im.EventLeave {
				t.Fatalf("from the forged token: %+v, want LEAVEs only", ev)
			}
			left[ev.Stream]++
		}
		for i := range strangers {
			if id := fmt.Sprintf("sg_f%05d", i); left[id] != 1 {
				t.Fatalf("%s: %d LEAVEs, want 1", id, left[id])
			}
		}
		if tok.String() != head.String() {
			t.Errorf("the forged token ends at %s, want the head %s", tok, head)
		}
	})

	t.Run("honest", func(t *testing.T) {
		const groups = 10
		for i := range groups {
			if err := l.SetGroup(ctx, fmt.Sprintf("gone%02d", i), owner); err != nil {
				t.Fatal(err)
			}
		}
		sum, err := l.Events().Summary(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		for i := range groups {
			if err := l.SetGroup(ctx, fmt.Sprintf("gone%02d", i), []im.GroupMember{{UserID: "x", Role: im.RoleOwner}}); err != nil {
				t.Fatal(err)
			}
		}
		var msgs []imsync.StoredMessage
		for seq := int64(1); seq <= 3; seq++ {
			msgs = append(msgs, imsync.StoredMessage{ConversationID: "sg_kept", Seq: seq, SendID: "u", SendTime: time.Now().UnixMilli()})
		}
		if err := l.RecordStored(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		if err := l.Events().AnnounceMessages(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		evs, tok := pageThrough(t, l, "u", sum.Token, 7, 10)
		left, got := map[string]int{}, 0
		for _, ev := range evs {
			switch {
			case ev.Type == im.EventLeave:
				left[ev.Stream]++
			case ev.Type == im.EventNewMessage && ev.Stream == "sg_kept":
				got++
			}
		}
		if len(left) != 2*groups {
			t.Errorf("LEAVEs of %d streams, want %d (chat and notifications of %d groups)", len(left), 2*groups, groups)
		}
		for id, n := range left {
			if n != 1 {
				t.Errorf("%s: %d LEAVEs, want 1", id, n)
			}
		}
		if got != 3 {
			t.Errorf("%d messages of the group kept, want 3", got)
		}
		head, err := l.Events().Head(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if tok.String() != head.String() {
			t.Errorf("the token ends at %s, want the head %s", tok, head)
		}
	})
}
