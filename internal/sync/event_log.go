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

// EventLog appends the events of changes to the logs where devices read them, and serves
// those logs: a user's state summary, the difference after a sync token, the heads to follow
// (difference.go). Events carry counters, which it reads through its state: the Ledger's, over
// msggate's own store, or a StateSource's (NewFollowerLog). It is safe for concurrent use.
type EventLog struct {
	cache *cache.Cache
	state stateReader
}

// stateReader is what the event log reads of users' conversation lists and seq state: one
// Redis round trip for many users' queries, with the heads of their logs when withHeads.
type stateReader interface {
	statesMany(ctx context.Context, queries []cache.StateQuery, withHeads bool) ([][]im.SeqState, []im.Cursor, error)
	conversationList(ctx context.Context, userID string) ([]string, error)
	ParseConversationID(id string) (im.Conversation, error)
}

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
func (e *EventLog) AnnounceMessages(ctx context.Context, msgs []StoredMessage) error {
	var grouped []cache.GroupAppend
	var personal []StoredMessage
	for _, m := range msgs {
		conv, err := e.state.ParseConversationID(m.ConversationID)
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
	if _, err := e.cache.AppendGroupEvents(ctx, grouped); err != nil {
		return err
	}
	return e.announcePersonalMessages(ctx, personal)
}

// announcePersonalMessages appends a NEW_MESSAGE event, with the user's new counters, to the
// log of both users of each message's single chat.
func (e *EventLog) announcePersonalMessages(ctx context.Context, msgs []StoredMessage) error {
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
		conv, err := e.state.ParseConversationID(m.ConversationID)
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
	states, _, err := e.state.statesMany(ctx, queries, false)
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
	_, err = e.cache.AppendEvents(ctx, appends)
	return err
}

// AnnounceRevoke tells every reader that the message at seq was revoked. A message is revoked
// once, so the announcement is keyed by its seq: announcing it again adds nothing.
func (e *EventLog) AnnounceRevoke(ctx context.Context, conv im.Conversation, seq int64) error {
	return e.announceToAll(ctx, conv, im.Event{Type: im.EventRevoke, ConversationID: conv.ID, Seq: seq},
		"r:"+conv.ID+":"+strconv.FormatInt(seq, 10))
}

// AnnounceDelete tells the deleting user (forEveryone false) or every reader that seqs were
// deleted. key names the change (IntentKey): a second announcement under it adds nothing.
func (e *EventLog) AnnounceDelete(ctx context.Context, userID string, conv im.Conversation, seqs []int64, forEveryone bool, key string) error {
	ev := im.Event{Type: im.EventDelete, ConversationID: conv.ID, Seqs: seqs, ForEveryone: forEveryone}
	if forEveryone {
		return e.announceToAll(ctx, conv, ev, key)
	}
	return e.announce(ctx, []string{userID}, ev, key)
}

// announceToAll logs a counter-free event of a conversation where all its readers find it: in
// a group's stream, or in the logs of a single chat's users.
func (e *EventLog) announceToAll(ctx context.Context, conv im.Conversation, ev im.Event, key string) error {
	if conv.Kind.IsGroup() {
		ev.Time = time.Now().UnixMilli()
		_, err := e.cache.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: ev, Key: key}})
		return err
	}
	users, err := personalReaders(conv)
	if err != nil {
		return err
	}
	return e.announce(ctx, users, ev, key)
}

// announce appends one counter-free event to each user's log, under key.
func (e *EventLog) announce(ctx context.Context, users []string, ev im.Event, key string) error {
	ev.Time = time.Now().UnixMilli()
	appends := make([]cache.EventAppend, len(users))
	for i, u := range users {
		appends[i] = cache.EventAppend{UserID: u, Event: ev, Key: key}
	}
	_, err := e.cache.AppendEvents(ctx, appends)
	return err
}

// announceStates appends an event that carries counters (READ, CLEAR) to each user's log, with
// the state each user is known to be in, under key; it returns the events as stored (the zero
// Event where the log had the key already).
func (e *EventLog) announceStates(ctx context.Context, ev im.Event, users []string, states []im.SeqState, key string) ([]im.Event, error) {
	ev.Time = time.Now().UnixMilli()
	appends := make([]cache.EventAppend, len(users))
	for i, u := range users {
		st := states[i]
		appends[i] = cache.EventAppend{UserID: u, Event: ev, Key: key,
			MaxSeq: st.MaxSeq, ConvMinSeq: st.MinSeq, ReadSeq: st.ReadSeq, UserMinSeq: st.UserMinSeq}
	}
	return e.cache.AppendEvents(ctx, appends)
}

// announceMinSeq tells every reader of the conversation that seqs below minSeq are gone: once
// in a group's stream, or in the log of each user of a single chat, with their counters.
func (e *EventLog) announceMinSeq(ctx context.Context, conversationID string, minSeq int64, key string) error {
	conv, err := im.ParseConversationID(conversationID)
	if err != nil {
		return err
	}
	ev := im.Event{Type: im.EventClear, ConversationID: conversationID, ForEveryone: true}
	if conv.Kind.IsGroup() {
		st, _, err := e.state.statesMany(ctx, []cache.StateQuery{{ConversationIDs: []string{conversationID}}}, false)
		if err != nil {
			return err
		}
		ev.Time = time.Now().UnixMilli()
		_, err = e.cache.AppendGroupEvents(ctx, []cache.GroupAppend{{Event: ev, MaxSeq: st[0][0].MaxSeq, MinSeq: minSeq, Key: key}})
		return err
	}
	members, err := personalReaders(conv)
	if err != nil {
		return err
	}
	states, err := e.membersStates(ctx, members, conversationID)
	if err != nil {
		return err
	}
	for i := range states {
		states[i].MinSeq = max(states[i].MinSeq, minSeq)
	}
	_, err = e.announceStates(ctx, ev, members, states, key)
	return err
}

// membersStates reads each member's state in one conversation, aligned with members.
func (e *EventLog) membersStates(ctx context.Context, members []string, conversationID string) ([]im.SeqState, error) {
	queries := make([]cache.StateQuery, len(members))
	for i, u := range members {
		queries[i] = cache.StateQuery{UserID: u, ConversationIDs: []string{conversationID}}
	}
	states, _, err := e.state.statesMany(ctx, queries, false)
	if err != nil {
		return nil, err
	}
	out := make([]im.SeqState, len(members))
	for i := range members {
		out[i] = states[i][0]
	}
	return out, nil
}
