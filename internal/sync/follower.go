package sync

import (
	"context"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// A follower Ledger (NewFollowerLedger) learns of changes from the store it follows rather
// than making them: its follower logs each one with the methods below, which take the
// counters the store holds now. AnnounceMessages, AnnounceRevoke and AnnounceDelete serve
// both kinds of Ledger.

// AnnounceRead logs a move of userID's read seq in a conversation, to readSeq or beyond, in
// the user's own log with the counters the store holds now. Announcing the same move again
// adds nothing.
func (l *Ledger) AnnounceRead(ctx context.Context, userID, conversationID string, readSeq int64) error {
	states, _, err := l.statesManyOne(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	s := states[0]
	s.ReadSeq = max(s.ReadSeq, readSeq)
	_, err = l.announceStates(ctx, im.Event{Type: im.EventRead, ConversationID: conversationID}, []string{userID},
		[]im.SeqState{s}, readKey(conversationID, s.ReadSeq))
	return err
}

// AnnounceUserClear logs that userID cleared a conversation for themselves: a CLEAR event in
// their own log with the floor the store holds now.
func (l *Ledger) AnnounceUserClear(ctx context.Context, userID, conversationID string) error {
	states, _, err := l.statesManyOne(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	s := states[0]
	_, err = l.announceStates(ctx, im.Event{Type: im.EventClear, ConversationID: conversationID}, []string{userID},
		[]im.SeqState{s}, userClearKey(conversationID, s.UserMinSeq))
	return err
}

// AnnounceConversationClear logs that a conversation was cleared for everyone, with the floor
// the store holds now (read through actorID, one of its readers): once in a group's stream, or
// in the log of each of conv.UserIDs with their counters.
func (l *Ledger) AnnounceConversationClear(ctx context.Context, actorID string, conv im.Conversation) error {
	ev := im.Event{Type: im.EventClear, ConversationID: conv.ID, ForEveryone: true, Time: time.Now().UnixMilli()}
	if conv.Kind.IsGroup() {
		states, _, err := l.statesManyOne(ctx, actorID, conv.ID)
		if err != nil {
			return err
		}
		st := states[0]
		_, err = l.cache.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: ev, MaxSeq: st.MaxSeq, MinSeq: st.MinSeq, Key: clearKey(conv.ID, st.MinSeq)}})
		return err
	}
	members, err := personalReaders(conv)
	if err != nil {
		return err
	}
	queries := make([]cache.StateQuery, len(members))
	for i, u := range members {
		queries[i] = cache.StateQuery{UserID: u, ConversationIDs: []string{conv.ID}}
	}
	states, _, err := l.statesMany(ctx, queries, false)
	if err != nil {
		return err
	}
	flat := make([]im.SeqState, len(members))
	for i := range members {
		flat[i] = states[i][0]
	}
	_, err = l.announceStates(ctx, ev, members, flat, clearKey(conv.ID, flat[0].MinSeq))
	return err
}

func (l *Ledger) statesManyOne(ctx context.Context, userID, conversationID string) ([]im.SeqState, []im.Cursor, error) {
	states, heads, err := l.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: []string{conversationID}}}, false)
	if err != nil {
		return nil, nil, err
	}
	return states[0], heads, nil
}
