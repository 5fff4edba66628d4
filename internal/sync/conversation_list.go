package sync

import (
	"context"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// MaxConversationsPerUser bounds the conversations a user's list is built from. The list is
// sorted by activity in memory (activity lives in each conversation's seq state, which every
// send already updates, so no per-member index has to be rewritten on every message).
const MaxConversationsPerUser = 10000

// UserConversations returns userID's conversations that hold messages, with their state,
// newest activity first (ties by conversation ID). One Redis round trip reads the list (or,
// when this instance read it before, only its version: lastLists) and the states of the
// conversations it held when this instance last read it, which is all a list that has not
// changed needs; a changed list costs more round trips. On a miss the list is one MongoDB
// query, then a fill; a Redis failure is logged and served from MongoDB.
func (l *Ledger) UserConversations(ctx context.Context, userID string) ([]im.SeqState, error) {
	known := l.lastLists.get(userID)
	cached, guessed, cacheErr := l.cache.GetConversationListWithStates(ctx, userID, known)
	ids, err := l.listFrom(ctx, userID, cached, cacheErr)
	if err != nil {
		return nil, err
	}
	query := []cache.StateQuery{{UserID: userID, ConversationIDs: ids}}
	var states [][]im.SeqState
	switch {
	case cacheErr != nil: // Redis is failing: the states come from MongoDB, as the list did
		states, _, err = l.statesFromCache(ctx, query, false, cache.States{}, cacheErr)
	case known.IDs != nil && sameMembers(ids, known.IDs):
		query[0].ConversationIDs = known.IDs // the states read are aligned with the known list
		states, _, err = l.statesFromCache(ctx, query, false, guessed, nil)
	default:
		states, _, err = l.statesMany(ctx, query, false)
	}
	if err != nil {
		return nil, err
	}
	// The list read from MongoDB after a miss is the list at the version seen before the read,
	// as every change moves the version after MongoDB has it.
	version := ""
	if cacheErr == nil {
		version = cached.Version
	}
	l.lastLists.remember(userID, ids, version)
	return im.ByActivity(states[0]), nil
}

// conversationList returns the IDs on userID's conversation list: from Redis, else from
// MongoDB, and then into Redis unless a change came meanwhile. A Redis failure is logged and
// served from MongoDB.
func (l *Ledger) conversationList(ctx context.Context, userID string) ([]string, error) {
	cached, cacheErr := l.cache.GetConversationList(ctx, userID)
	return l.listFrom(ctx, userID, cached, cacheErr)
}

// listFrom completes a read of userID's cached list (cacheErr: it failed): the cached IDs, else
// the list from MongoDB, filled into Redis when Redis answered.
func (l *Ledger) listFrom(ctx context.Context, userID string, cached cache.ConversationList, cacheErr error) ([]string, error) {
	if cacheErr != nil {
		l.opts.Logger.WarnContext(ctx, "reading the conversation list from MongoDB: cache failed", "err", cacheErr)
	} else if cached.Cached {
		return cached.IDs[:min(len(cached.IDs), MaxConversationsPerUser)], nil
	}
	list, err := l.lists.Load(ctx, userID)()
	if err != nil {
		return nil, err
	}
	ids := list.IDs
	// A list read cut short at the limit is not cached: it names an arbitrary part of the list.
	if cacheErr == nil && !list.Truncated {
		if err := l.cache.FillConversationList(ctx, userID, cached.Version, ids); err != nil {
			l.opts.Logger.WarnContext(ctx, "filling the conversation list cache failed", "err", err)
		}
	}
	return ids, nil
}

// AddUserConversations puts conversations on users' lists: MongoDB, then the cached lists. The
// caller acknowledges its write only after this returns, so that no list read after the
// acknowledgement misses the conversation.
func (l *Ledger) AddUserConversations(ctx context.Context, entries []chunkstore.UserConversation) error {
	if len(entries) == 0 {
		return nil
	}
	if err := l.store.AddUserConversations(ctx, entries); err != nil {
		return err
	}
	byUser := map[string][]string{}
	for _, e := range entries {
		byUser[e.UserID] = append(byUser[e.UserID], e.ConversationID)
	}
	return l.cache.AddToConversationLists(ctx, byUser, MaxConversationsPerUser)
}

// Role returns userID's role in a group conversation, 0 when they are not a member or the
// conversation is not a group's.
func (l *Ledger) Role(ctx context.Context, userID string, conv im.Conversation) (int32, error) {
	if conv.GroupID == "" {
		return 0, nil
	}
	roles, _, err := l.groupRoles(ctx, userID, []string{conv.GroupID}, nil)
	if err != nil {
		return 0, err
	}
	return roles[conv.GroupID], nil
}

// SetGroup makes members the group's member list and keeps its members' conversation lists in
// step: added members get the group's chat and notification conversations, removed members
// lose them (and with them, access). The list is checked first (im.ValidateGroup); a refused
// list changes nothing.
func (l *Ledger) SetGroup(ctx context.Context, groupID string, members []im.GroupMember) error {
	if err := im.ValidateGroup(groupID, members); err != nil {
		return err
	}
	chat, err := im.GroupConversationID(groupID)
	if err != nil {
		return err
	}
	notes, _ := im.GroupNotificationConversationID(groupID)
	before, err := l.store.GroupMembers(ctx, groupID)
	if err != nil {
		return err
	}
	had := make(map[string]bool, len(before))
	for _, m := range before {
		had[m.UserID] = true
	}
	keep := make(map[string]bool, len(members))
	var added, gone []string
	var entries []chunkstore.UserConversation
	stored := make([]chunkstore.GroupMember, len(members))
	for i, m := range members {
		stored[i] = chunkstore.GroupMember{GroupID: groupID, UserID: m.UserID, Role: m.Role}
		keep[m.UserID] = true
		if !had[m.UserID] {
			added = append(added, m.UserID)
		}
		// Every member's entries, not only the added members': a change that failed after
		// storing the members and before their entries is completed by its retry. Entries
		// that exist cost an ignored duplicate insert.
		entries = append(entries,
			chunkstore.UserConversation{UserID: m.UserID, ConversationID: chat},
			chunkstore.UserConversation{UserID: m.UserID, ConversationID: notes})
	}
	for _, m := range before {
		if !keep[m.UserID] {
			gone = append(gone, m.UserID)
		}
	}
	// Every instance reads the changed members' memberships from MongoDB until the change is
	// in (cache.HoldMemberships); a failure to hold them changes nothing.
	held := heldMembers(before, stored)
	if err := l.cache.HoldMemberships(ctx, groupID, held); err != nil {
		return err
	}
	// Lists are trusted by the conversation list, so departed members lose the entries
	// before the member list changes: a failure in between leaves access narrower, not wider.
	for _, conv := range []string{chat, notes} {
		if err := l.store.RemoveUserConversation(ctx, conv, gone); err != nil {
			return err
		}
		if err := l.cache.RemoveFromConversationLists(ctx, conv, gone); err != nil {
			return err
		}
	}
	// Only the difference is written, in batches that each finish within the store timeout.
	if err := l.store.ApplyGroupMembers(ctx, groupID, before, stored); err != nil {
		return err
	}
	if err := l.cache.ReleaseMemberships(ctx, groupID, held); err != nil {
		return err
	}
	if err := l.AddUserConversations(ctx, entries); err != nil {
		return err
	}
	// Live devices of the users who joined or left re-read which group streams they follow.
	// A hint lost here (a failure is logged only, and a retry of the change, having nothing
	// left to change, hints no one) is made up for by the hubs' membership check
	// (HubOptions.MembershipCheck).
	if err := l.outbox.Fault("resync"); err != nil {
		return err
	}
	if err := l.cache.Resync(ctx, append(added, gone...)); err != nil {
		l.opts.Logger.WarnContext(ctx, "telling devices their groups changed failed", "err", err)
	}
	return nil
}
