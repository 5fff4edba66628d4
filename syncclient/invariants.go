package syncclient

import (
	"errors"
	"fmt"
)

// Applied describes one event the replica applied: the conversation's counters before and
// after, and the replica's total unread after.
type Applied struct {
	UserID string
	Event  Event
	// Known: the conversation was in the replica before the event (Before is zero otherwise).
	Known         bool
	Before, After Counters
	TotalUnread   int64
}

// CheckInvariants checks what must hold after every applied event, whatever happened before:
// counts are never negative and agree with the counters they come from, the read seq never
// goes back, and a user's own message is never unread: it leaves the read seq at or past it
// and the unread count no higher than it was. It returns every violation found.
func CheckInvariants(a Applied) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("user %s, event %s at %d in %s: "+format,
			append([]any{a.UserID, a.Event.Type, a.Event.Position, a.Event.ConversationID}, args...)...))
	}
	ev := a.Event
	if ev.counted() {
		if ev.UnreadCount < 0 {
			bad("the event's unread count is %d", ev.UnreadCount)
		}
		if want := unreadOf(ev.MaxSeq, ev.MinSeq, ev.ReadSeq); ev.UnreadCount != want {
			bad("the event's unread count %d does not match its counters (maxSeq %d, minSeq %d, readSeq %d: %d)",
				ev.UnreadCount, ev.MaxSeq, ev.MinSeq, ev.ReadSeq, want)
		}
	}
	if a.After.UnreadCount < 0 {
		bad("unread count %d", a.After.UnreadCount)
	}
	if want := unreadOf(a.After.MaxSeq, a.After.MinSeq, a.After.ReadSeq); a.After.UnreadCount != want && ev.counted() {
		bad("unread count %d does not match the counters %+v", a.After.UnreadCount, a.After)
	}
	if a.TotalUnread < 0 {
		bad("total unread %d", a.TotalUnread)
	}
	if a.Known && a.After.ReadSeq < a.Before.ReadSeq && ev.Type != EventLeave {
		// (LEAVE drops the conversation with its counters.)
		bad("read seq went back from %d to %d", a.Before.ReadSeq, a.After.ReadSeq)
	}
	if ev.Type == EventNewMessage && ev.SendID == a.UserID {
		if ev.ReadSeq < ev.Seq {
			bad("own message at seq %d, but the event's read seq is %d", ev.Seq, ev.ReadSeq)
		}
		if a.After.ReadSeq < ev.Seq {
			bad("own message at seq %d left the read seq at %d", ev.Seq, a.After.ReadSeq)
		}
		if a.After.UnreadCount > a.Before.UnreadCount {
			bad("own message at seq %d raised the unread count from %d to %d", ev.Seq, a.Before.UnreadCount, a.After.UnreadCount)
		}
	}
	return errors.Join(errs...)
}
