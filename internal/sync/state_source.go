package sync

import (
	"context"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// StateSource is where a Ledger over a store msggate does not own reads users' conversation
// lists and seq state (OpenIM mode: OpenIM's MongoDB and Redis, only read). Its event logs
// stay in msggate's own Redis, filled by whatever follows that store's changes.
type StateSource interface {
	// ConversationIDs returns the IDs on userID's conversation list.
	ConversationIDs(ctx context.Context, userID string) ([]string, error)
	// States returns userID's seq state in each conversation, aligned with conversationIDs.
	States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error)
	// ParseConversationID checks an ID by the store's rules and says what it names.
	ParseConversationID(id string) (im.Conversation, error)
}

// parseConversationID checks id by the rules of the store the Ledger serves.
func (l *Ledger) parseConversationID(id string) (im.Conversation, error) {
	if l.source != nil {
		return l.source.ParseConversationID(id)
	}
	return im.ParseConversationID(id)
}

// NewFollowerLedger returns a Ledger that serves sync (Summary, Difference, the Hub) over a
// store it does not own: lists and counters come from src, events from c's logs. It has no
// write path: its writers' methods must not be called.
func NewFollowerLedger(c *cache.Cache, src StateSource, opts Options) *Ledger {
	l := NewLedger(nil, c, opts)
	l.source = src
	return l
}

// sourceStates is statesMany over the StateSource. The heads are read before the states, so
// the events after a head are all reflected in, or newer than, the states read after it.
func (l *Ledger) sourceStates(ctx context.Context, queries []cache.StateQuery, withHeads bool) ([][]im.SeqState, []im.Cursor, error) {
	var heads []im.Cursor
	if withHeads {
		heads = make([]im.Cursor, len(queries))
		for i, q := range queries {
			h, err := l.cache.EventHead(ctx, q.UserID)
			if err != nil {
				return nil, nil, err
			}
			heads[i] = h
		}
	}
	out := make([][]im.SeqState, len(queries))
	for i, q := range queries {
		states, err := l.source.States(ctx, q.UserID, q.ConversationIDs)
		if err != nil {
			return nil, nil, err
		}
		out[i] = states
	}
	return out, heads, nil
}
