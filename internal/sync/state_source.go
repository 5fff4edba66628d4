package sync

import (
	"context"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// StateSource is where an event log over a store msggate does not own reads users'
// conversation lists and seq state (OpenIM mode: OpenIM's MongoDB and Redis, only read). Its
// event logs stay in msggate's own Redis, filled by whatever follows that store's changes.
type StateSource interface {
	// ConversationIDs returns the IDs on userID's conversation list.
	ConversationIDs(ctx context.Context, userID string) ([]string, error)
	// States returns userID's seq state in each conversation, aligned with conversationIDs.
	States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error)
	// ParseConversationID checks an ID by the store's rules and says what it names.
	ParseConversationID(id string) (im.Conversation, error)
}

// NewFollowerLog returns an EventLog that serves sync (Summary, Difference, the Hub) over a
// store msggate does not own: lists and counters come from src, events from c's logs, which
// a follower of the store's changes fills with the Announce methods.
func NewFollowerLog(c *cache.Cache, src StateSource) *EventLog {
	return &EventLog{cache: c, state: sourceState{src: src, cache: c}}
}

// sourceState is a StateSource as the event log reads state, with the heads of the logs from
// msggate's Redis.
type sourceState struct {
	src   StateSource
	cache *cache.Cache
}

func (s sourceState) conversationList(ctx context.Context, userID string) ([]string, error) {
	return s.src.ConversationIDs(ctx, userID)
}

func (s sourceState) ParseConversationID(id string) (im.Conversation, error) {
	return s.src.ParseConversationID(id)
}

// statesMany reads the states from the StateSource. The heads are read before the states, so
// the events after a head are all reflected in, or newer than, the states read after it.
func (s sourceState) statesMany(ctx context.Context, queries []cache.StateQuery, withHeads bool) ([][]im.SeqState, []im.Cursor, error) {
	var heads []im.Cursor
	if withHeads {
		heads = make([]im.Cursor, len(queries))
		for i, q := range queries {
			h, err := s.cache.EventHead(ctx, q.UserID)
			if err != nil {
				return nil, nil, err
			}
			heads[i] = h
		}
	}
	out := make([][]im.SeqState, len(queries))
	for i, q := range queries {
		states, err := s.src.States(ctx, q.UserID, q.ConversationIDs)
		if err != nil {
			return nil, nil, err
		}
		out[i] = states
	}
	return out, heads, nil
}
