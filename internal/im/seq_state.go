package im

import (
	"cmp"
	"slices"
	"strings"
)

// SeqState is one user's seq state in one conversation: what unread counts, the visible window
// and the history page arithmetic are computed from, whichever store it was read from.
type SeqState struct {
	ConversationID string
	MaxSeq         int64 // the highest seq that holds (or held) a message
	MinSeq         int64 // the conversation's floor: retention, clear for everyone
	ReadSeq        int64 // the user's read seq, shared by all their devices
	UserMinSeq     int64 // the user's own floor: clear for self, joined without history
	// LastTime is the time (ms) of the conversation's newest activity, for ordering lists.
	LastTime int64
	// ChunksVersion names the state of the conversation's chunks when this state was read: it
	// changes with every write to them. A copy of a chunk read after this state, under the same
	// version, is current. Empty when unknown: then no copy can be proven current.
	ChunksVersion string
}

// Unread is the user's unread count, computed from the seqs. Messages below the lowest seq the
// user may read (cleared for them or for everyone) never count.
func (s SeqState) Unread() int64 { return Unread(s.MaxSeq, s.ReadSeq, s.VisibleMin()) }

// VisibleMin is the lowest seq the user may read.
func (s SeqState) VisibleMin() int64 {
	lo := int64(1)
	if s.MinSeq > lo {
		lo = s.MinSeq
	}
	if s.UserMinSeq > lo {
		lo = s.UserMinSeq
	}
	return lo
}

// ByActivity keeps the conversations that hold messages, newest activity first (ties by
// conversation ID), reusing all's storage. A conversation without messages has no activity to
// show yet (a group's notification conversation before its first notification, say). It is the
// order of every conversation list, whichever store the states come from.
func ByActivity(all []SeqState) []SeqState {
	states := all[:0]
	for _, st := range all {
		if st.MaxSeq > 0 {
			states = append(states, st)
		}
	}
	slices.SortFunc(states, func(a, b SeqState) int {
		if c := cmp.Compare(b.LastTime, a.LastTime); c != 0 {
			return c
		}
		return strings.Compare(a.ConversationID, b.ConversationID)
	})
	return states
}

// ListPosition is a place in the order of a conversation list (newest activity first, ties by
// conversation ID): where a page ended, so that the next page starts right after it even when
// conversations before it moved meanwhile.
type ListPosition struct {
	Time           int64
	ConversationID string
}

// PositionOf is the place of a conversation in its list's order.
func PositionOf(st SeqState) ListPosition {
	return ListPosition{Time: st.LastTime, ConversationID: st.ConversationID}
}

// Precedes reports whether a conversation of activity time t and ID id comes after p in the
// order.
func (p ListPosition) Precedes(t int64, id string) bool {
	if t != p.Time {
		return t < p.Time
	}
	return id > p.ConversationID
}

// ConversationPage is one page of a user's conversation list, in the list's order.
type ConversationPage struct {
	States []SeqState
	// End is the place of the page's last conversation (zero on an empty page): the next
	// page starts after it.
	End     ListPosition
	HasMore bool
}

// PageAfter cuts the page of at most n conversations after the position after (nil: the first
// page) out of a whole list in activity order (ByActivity).
func PageAfter(list []SeqState, after *ListPosition, n int) ConversationPage {
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(list, *after, func(st SeqState, p ListPosition) int {
			if p.Precedes(st.LastTime, st.ConversationID) {
				return 1
			}
			return -1
		})
	}
	end := min(start+n, len(list))
	p := ConversationPage{States: list[start:end], HasMore: end < len(list)}
	if end > start {
		p.End = PositionOf(list[end-1])
	}
	return p
}
