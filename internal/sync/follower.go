package sync

import (
	"context"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// A follower's EventLog (NewFollowerLog) learns of changes from the store it follows rather
// than from a Ledger making them: its follower logs each one with the methods below, which
// take the counters the store holds now. AnnounceMessages, AnnounceRevoke and AnnounceDelete
// serve both kinds of log.

// AnnounceRead logs a move of userID's read seq in a conversation, to readSeq or beyond, in
// the user's own log with the counters the store holds now. Announcing the same move again
// adds nothing.
func (e *EventLog) AnnounceRead(ctx context.Context, userID, conversationID string, readSeq int64) error {
	s, err := e.stateOf(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	s.ReadSeq = max(s.ReadSeq, readSeq)
	_, err = e.announceStates(ctx, im.Event{Type: im.EventRead, ConversationID: conversationID}, []string{userID},
		[]im.SeqState{s}, readKey(conversationID, s.ReadSeq))
	return err
}

// AnnounceUserClear logs that userID cleared a conversation for themselves: a CLEAR event in
// their own log with the floor the store holds now.
func (e *EventLog) AnnounceUserClear(ctx context.Context, userID, conversationID string) error {
	s, err := e.stateOf(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	_, err = e.announceStates(ctx, im.Event{Type: im.EventClear, ConversationID: conversationID}, []string{userID},
		[]im.SeqState{s}, userClearKey(conversationID, s.UserMinSeq))
	return err
}

// AnnounceConversationClear logs that a conversation was cleared for everyone, with the floor
// the store holds now (read through actorID, one of its readers): once in a group's stream, or
// in the log of each of conv.UserIDs with their counters.
func (e *EventLog) AnnounceConversationClear(ctx context.Context, actorID string, conv im.Conversation) error {
	ev := im.Event{Type: im.EventClear, ConversationID: conv.ID, ForEveryone: true, Time: time.Now().UnixMilli()}
	if conv.Kind.IsGroup() {
		st, err := e.stateOf(ctx, actorID, conv.ID)
		if err != nil {
			return err
		}
		_, err = e.cache.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: ev, MaxSeq: st.MaxSeq, MinSeq: st.MinSeq, Key: clearKey(conv.ID, st.MinSeq)}})
		return err
	}
	members, err := personalReaders(conv)
	if err != nil {
		return err
	}
	states, err := e.membersStates(ctx, members, conv.ID)
	if err != nil {
		return err
	}
	_, err = e.announceStates(ctx, ev, members, states, clearKey(conv.ID, states[0].MinSeq))
	return err
}

// stateOf reads userID's state in one conversation.
func (e *EventLog) stateOf(ctx context.Context, userID, conversationID string) (im.SeqState, error) {
	states, err := e.membersStates(ctx, []string{userID}, conversationID)
	if err != nil {
		return im.SeqState{}, err
	}
	return states[0], nil
}
