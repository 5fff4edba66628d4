package sync

import (
	"context"

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

func (l *Ledger) statesManyOne(ctx context.Context, userID, conversationID string) ([]im.SeqState, []im.Cursor, error) {
	states, heads, err := l.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: []string{conversationID}}}, false)
	if err != nil {
		return nil, nil, err
	}
	return states[0], heads, nil
}
