package sync

import (
	"context"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// MemberView is what a member's counters in a group conversation add to the group's own: a
// group stream's events carry the conversation's max seq and min seq, and each member's read
// seq and own min seq (after a clear for them) are added when an event is served to them.
type MemberView struct {
	ReadSeq, UserMinSeq int64
	// ConvMinSeq and MaxSeq are the conversation's, as last seen: a stream recreated after a
	// loss of Redis knows only the min seqs it logged since.
	ConvMinSeq, MaxSeq int64
}

// memberViews reads userID's view of each group conversation: one Redis round trip (and, for
// what Redis misses, MongoDB).
func (e *EventLog) memberViews(ctx context.Context, userID string, conversationIDs []string) (map[string]MemberView, error) {
	out := make(map[string]MemberView, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	states, _, err := e.state.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: conversationIDs}}, false)
	if err != nil {
		return nil, err
	}
	return viewsOf(states[0]), nil
}

// viewsOf is a member's views of the conversations whose states they are.
func viewsOf(states []im.SeqState) map[string]MemberView {
	out := make(map[string]MemberView, len(states))
	for _, st := range states {
		out[st.ConversationID] = MemberView{ReadSeq: st.ReadSeq, UserMinSeq: st.UserMinSeq, ConvMinSeq: st.MinSeq, MaxSeq: st.MaxSeq}
	}
	return out
}

// MemberViews is memberViews for a subscription that starts following groups.
func (e *EventLog) MemberViews(ctx context.Context, userID string, conversationIDs []string) (map[string]MemberView, error) {
	return e.memberViews(ctx, userID, conversationIDs)
}

// observe takes what an event of the member's own log or of the group's stream says about the
// member's view (values only go up).
func (v *MemberView) observe(ev im.Event, userID string) {
	switch {
	case ev.Type == im.EventNewMessage && ev.SendID == userID:
		v.ReadSeq = max(v.ReadSeq, ev.Seq) // a sender has read their own message
	case ev.Type == im.EventRead:
		v.ReadSeq = max(v.ReadSeq, ev.ReadSeq)
	case ev.Type == im.EventClear && ev.Stream == "":
		v.UserMinSeq = max(v.UserMinSeq, ev.MinSeq)
	case ev.Type == im.EventClear:
		v.ConvMinSeq = max(v.ConvMinSeq, ev.MinSeq)
	}
	if ev.Type.Counted() {
		v.MaxSeq = max(v.MaxSeq, ev.MaxSeq)
	}
}

// personalize turns a group stream's event into the member's: counted events get the
// member's min seq, read seq and unread count after the change. The read seq is never above
// the event's max seq, so the counters read as of the event.
func (v *MemberView) personalize(ev *im.Event, userID string) {
	v.observe(*ev, userID)
	if !ev.Type.Counted() {
		return
	}
	minSeq := max(1, ev.MinSeq, v.ConvMinSeq, v.UserMinSeq)
	ev.MinSeq = minSeq
	ev.ReadSeq = min(v.ReadSeq, ev.MaxSeq)
	ev.Unread = max(0, ev.MaxSeq-max(ev.ReadSeq, minSeq-1))
}

// joinEvent is the JOIN event that starts a member's devices on a group's stream at head.
func (v MemberView) joinEvent(conversationID string, head im.Cursor, now int64) im.Event {
	ev := im.Event{Type: im.EventJoin, Stream: conversationID, ConversationID: conversationID, Time: now,
		Epoch: head.Epoch, Position: head.Position, MaxSeq: v.MaxSeq, MinSeq: max(1, v.ConvMinSeq, v.UserMinSeq)}
	ev.ReadSeq = min(v.ReadSeq, v.MaxSeq)
	ev.Unread = max(0, ev.MaxSeq-max(ev.ReadSeq, ev.MinSeq-1))
	return ev
}
