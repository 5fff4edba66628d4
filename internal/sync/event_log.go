package sync

import (
	"context"
	"strconv"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// Every change a user's devices must learn is appended to that user's event log (see
// cache.AppendEvents). A change is acknowledged to its caller only after its events are
// appended: a failed append is returned as an error, so the caller retries, and retries are
// safe (a repeated send finds its seq by client message ID and announces it again; events are
// idempotent for a replica).

// Members returns the users whose devices must learn about changes in a conversation.
func (l *Ledger) Members(ctx context.Context, conv im.Conversation) ([]string, error) {
	switch conv.Kind {
	case im.SingleChat, im.UserNotification:
		return conv.UserIDs, nil
	case im.GroupChat, im.GroupNotification:
		ms, err := l.store.GroupMembers(ctx, conv.GroupID)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.UserID
		}
		return out, nil
	}
	return nil, im.Errorf(im.EINTERNAL, "conversation %s has no known kind", conv.ID)
}

// StoredMessage names one message that was just stored (see RecordStored, AnnounceMessages).
type StoredMessage struct {
	ConversationID string
	Seq            int64
	SendID         string
	SendTime       int64
}

// AnnounceMessages appends a NEW_MESSAGE event, with the new counters, to the log of every
// member of each message's conversation. Messages come in seq order per conversation.
func (l *Ledger) AnnounceMessages(ctx context.Context, msgs []StoredMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	members := map[string][]string{}
	userConvs := map[string][]string{}
	var users []string
	for _, m := range msgs {
		if _, ok := members[m.ConversationID]; ok {
			continue
		}
		conv, err := im.ParseConversationID(m.ConversationID)
		if err != nil {
			return err
		}
		ms, err := l.Members(ctx, conv)
		if err != nil {
			return err
		}
		members[m.ConversationID] = ms
		for _, u := range ms {
			if _, ok := userConvs[u]; !ok {
				users = append(users, u)
			}
			userConvs[u] = append(userConvs[u], m.ConversationID)
		}
	}
	queries := make([]cache.StateQuery, len(users))
	for i, u := range users {
		queries[i] = cache.StateQuery{UserID: u, ConversationIDs: userConvs[u]}
	}
	states, _, err := l.statesMany(ctx, queries, false)
	if err != nil {
		return err
	}
	stateOf := map[[2]string]im.SeqState{}
	for i, u := range users {
		for _, st := range states[i] {
			stateOf[[2]string{u, st.ConversationID}] = st
		}
	}
	var appends []cache.EventAppend
	for _, m := range msgs {
		for _, u := range members[m.ConversationID] {
			st := stateOf[[2]string{u, m.ConversationID}]
			read := st.ReadSeq
			if u == m.SendID {
				read = max(read, m.Seq) // a sender has read their own message
			}
			appends = append(appends, cache.EventAppend{
				UserID: u,
				Event: im.Event{Type: im.EventNewMessage, Time: m.SendTime, ConversationID: m.ConversationID,
					Seq: m.Seq, SendID: m.SendID},
				MaxSeq: m.Seq, ConvMinSeq: st.MinSeq, ReadSeq: read, UserMinSeq: st.UserMinSeq,
				// A message has one seq for good: its writer, a retry of its send and the
				// relay all announce it under this key, and the log keeps the first.
				Key: "m:" + m.ConversationID + ":" + strconv.FormatInt(m.Seq, 10),
			})
		}
	}
	_, err = l.cache.AppendEvents(ctx, appends)
	return err
}

// AnnounceRevoke tells every member that the message at seq was revoked. A message is revoked
// once, so the announcement is keyed by its seq: announcing it again adds nothing.
func (l *Ledger) AnnounceRevoke(ctx context.Context, conv im.Conversation, seq int64) error {
	ms, err := l.Members(ctx, conv)
	if err != nil {
		return err
	}
	return l.announce(ctx, ms, im.Event{Type: im.EventRevoke, ConversationID: conv.ID, Seq: seq},
		"r:"+conv.ID+":"+strconv.FormatInt(seq, 10))
}

// AnnounceDelete tells the deleting user (forEveryone false) or every member that seqs were
// deleted. key names the change (IntentKey): a second announcement under it adds nothing.
func (l *Ledger) AnnounceDelete(ctx context.Context, userID string, conv im.Conversation, seqs []int64, forEveryone bool, key string) error {
	users := []string{userID}
	if forEveryone {
		var err error
		if users, err = l.Members(ctx, conv); err != nil {
			return err
		}
	}
	return l.announce(ctx, users, im.Event{Type: im.EventDelete, ConversationID: conv.ID, Seqs: seqs, ForEveryone: forEveryone}, key)
}

// announce appends one counter-free event to each user's log, under key.
func (l *Ledger) announce(ctx context.Context, users []string, ev im.Event, key string) error {
	ev.Time = time.Now().UnixMilli()
	appends := make([]cache.EventAppend, len(users))
	for i, u := range users {
		appends[i] = cache.EventAppend{UserID: u, Event: ev, Key: key}
	}
	_, err := l.cache.AppendEvents(ctx, appends)
	return err
}

// announceStates appends an event that carries counters (READ, CLEAR) to each user's log, with
// the state each user is known to be in, under key; it returns the events as stored (the zero
// Event where the log had the key already).
func (l *Ledger) announceStates(ctx context.Context, ev im.Event, users []string, states []im.SeqState, key string) ([]im.Event, error) {
	ev.Time = time.Now().UnixMilli()
	appends := make([]cache.EventAppend, len(users))
	for i, u := range users {
		st := states[i]
		appends[i] = cache.EventAppend{UserID: u, Event: ev, Key: key,
			MaxSeq: st.MaxSeq, ConvMinSeq: st.MinSeq, ReadSeq: st.ReadSeq, UserMinSeq: st.UserMinSeq}
	}
	return l.cache.AppendEvents(ctx, appends)
}

// Difference is a page of a user's events after a token.
type Difference struct {
	// Token to pass next time: after the last event returned, or the log's head.
	Token im.SyncToken
	// Events after the token given, oldest first.
	Events []im.Event
	// HasMore: more events follow; ask again with Token.
	HasMore bool
	// TooLong: the token cannot be served (the log was lost or has moved past it). The client
	// must start again from the state summary; Token is then the log's head.
	TooLong bool
}

// Difference returns up to limit of userID's events after since.
func (l *Ledger) Difference(ctx context.Context, userID string, since im.SyncToken, limit int) (Difference, error) {
	page, err := l.cache.ReadEvents(ctx, userID, since, limit)
	if err != nil {
		return Difference{}, err
	}
	d := Difference{Token: page.Head, TooLong: page.TooLong, Events: page.Events}
	if n := len(page.Events); n > 0 {
		d.Token = page.Events[n-1].Token()
		d.HasMore = d.Token.Position < page.Head.Position
	}
	return d, nil
}

// Summary is a user's state summary: every conversation with messages, newest activity first,
// and the token of the event log it is valid from.
type Summary struct {
	Token         im.SyncToken
	Conversations []im.SeqState
}

// Summary reads userID's state summary. The token is read in the same Redis round trip as the
// seq and read state, before it, so replaying the events after the token from the summary
// loses nothing.
func (l *Ledger) Summary(ctx context.Context, userID string) (Summary, error) {
	states, head, err := l.userConversations(ctx, userID, true)
	if err != nil {
		return Summary{}, err
	}
	return Summary{Token: head, Conversations: states}, nil
}
