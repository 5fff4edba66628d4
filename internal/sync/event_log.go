package sync

import (
	"context"
	"strconv"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// Every change a user's devices must learn is logged once, where every reader finds it: a
// group conversation's changes (messages, revokes, deletes and clears for everyone) in the
// conversation's own stream, whatever the group's size; everything else (reads, deletes and
// clears for one user, single chats) in each user's event log (see cache.AppendEvents and
// cache.AppendGroupEvents). A device follows its user's log and the stream of each group the
// user is in; its sync token holds a cursor for each (im.SyncToken). A change is acknowledged
// to its caller only after its events are logged: a failed append is returned as an error, so
// the caller retries, and retries are safe (every event carries a key naming its change, and a
// stream logs a key once).

// personalReaders returns the users whose own logs take a change in a conversation that is not
// a group's: the two users of a single chat, the owner of a notification conversation.
func personalReaders(conv im.Conversation) ([]string, error) {
	switch conv.Kind {
	case im.SingleChat, im.UserNotification:
		if len(conv.UserIDs) > 0 {
			return conv.UserIDs, nil
		}
	}
	return nil, im.Errorf(im.EINTERNAL, "conversation %s has no personal readers", conv.ID)
}

// StoredMessage names one message that was just stored (see RecordStored, AnnounceMessages).
type StoredMessage struct {
	ConversationID string
	Seq            int64
	SendID         string
	SendTime       int64
	// Readers are the users whose own logs take the message when its conversation's ID does
	// not name them (an OpenIM single chat's, whose user IDs may hold the separator); empty:
	// the ID's users.
	Readers []string
}

// messageKey names a message's announcement. A message has one seq for good: its writer, a
// retry of its send and the relay all announce it under this key, and the stream keeps the
// first.
func messageKey(conversationID string, seq int64) string {
	return "m:" + conversationID + ":" + strconv.FormatInt(seq, 10)
}

// AnnounceMessages logs a NEW_MESSAGE event for each message: once in its group's stream, or
// in the log of each user of a single chat, with the new counters. Messages come in seq order
// per conversation.
func (l *Ledger) AnnounceMessages(ctx context.Context, msgs []StoredMessage) error {
	var grouped []cache.GroupAppend
	var personal []StoredMessage
	for _, m := range msgs {
		conv, err := l.parseConversationID(m.ConversationID)
		if err != nil {
			return err
		}
		if !conv.Kind.IsGroup() {
			personal = append(personal, m)
			continue
		}
		grouped = append(grouped, cache.GroupAppend{
			Event: im.Event{Type: im.EventNewMessage, Time: m.SendTime, ConversationID: m.ConversationID,
				Seq: m.Seq, SendID: m.SendID},
			MaxSeq: m.Seq, Key: messageKey(m.ConversationID, m.Seq)})
	}
	if _, err := l.cache.AppendGroupEvents(ctx, grouped); err != nil {
		return err
	}
	return l.announcePersonalMessages(ctx, personal)
}

// announcePersonalMessages appends a NEW_MESSAGE event, with the user's new counters, to the
// log of both users of each message's single chat.
func (l *Ledger) announcePersonalMessages(ctx context.Context, msgs []StoredMessage) error {
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
		conv, err := l.parseConversationID(m.ConversationID)
		if err != nil {
			return err
		}
		if len(m.Readers) > 0 {
			conv.UserIDs = m.Readers
		}
		ms, err := personalReaders(conv)
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
				Key: messageKey(m.ConversationID, m.Seq),
			})
		}
	}
	_, err = l.cache.AppendEvents(ctx, appends)
	return err
}

// AnnounceRevoke tells every reader that the message at seq was revoked. A message is revoked
// once, so the announcement is keyed by its seq: announcing it again adds nothing.
func (l *Ledger) AnnounceRevoke(ctx context.Context, conv im.Conversation, seq int64) error {
	return l.announceToAll(ctx, conv, im.Event{Type: im.EventRevoke, ConversationID: conv.ID, Seq: seq},
		"r:"+conv.ID+":"+strconv.FormatInt(seq, 10))
}

// AnnounceDelete tells the deleting user (forEveryone false) or every reader that seqs were
// deleted. key names the change (IntentKey): a second announcement under it adds nothing.
func (l *Ledger) AnnounceDelete(ctx context.Context, userID string, conv im.Conversation, seqs []int64, forEveryone bool, key string) error {
	ev := im.Event{Type: im.EventDelete, ConversationID: conv.ID, Seqs: seqs, ForEveryone: forEveryone}
	if forEveryone {
		return l.announceToAll(ctx, conv, ev, key)
	}
	return l.announce(ctx, []string{userID}, ev, key)
}

// announceToAll logs a counter-free event of a conversation where all its readers find it: in
// a group's stream, or in the logs of a single chat's users.
func (l *Ledger) announceToAll(ctx context.Context, conv im.Conversation, ev im.Event, key string) error {
	if conv.Kind.IsGroup() {
		ev.Time = time.Now().UnixMilli()
		_, err := l.cache.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: ev, Key: key}})
		return err
	}
	users, err := personalReaders(conv)
	if err != nil {
		return err
	}
	return l.announce(ctx, users, ev, key)
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
