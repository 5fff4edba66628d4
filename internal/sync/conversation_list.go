package sync

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// MaxConversationsPerUser bounds the conversations a user's list is built from. A page of the
// list is cut from the user's cached order (ConversationPage), which every send to a single
// chat keeps; a group's conversations are placed by their seq state, which every send already
// updates, so no send writes to every member of a group.
const MaxConversationsPerUser = cache.MaxConversationList

// UserConversations returns userID's conversations that hold messages, with their state,
// newest activity first (ties by conversation ID). One Redis round trip reads the list (or,
// when this instance read it before, only its version: lastLists) and the states of the
// conversations it held when this instance last read it, which is all a list that has not
// changed needs; a changed list costs more round trips. On a miss the list is one MongoDB
// query, then a fill; a Redis failure is logged and served from MongoDB.
func (l *Ledger) UserConversations(ctx context.Context, userID string) ([]im.SeqState, error) {
	return l.wholeList(ctx, userID, false)
}

// wholeList is UserConversations; with fillOrder, it also caches the user's order from the
// list and states it read, unless they may be cut short or come from MongoDB because Redis
// failed.
func (l *Ledger) wholeList(ctx context.Context, userID string, fillOrder bool) ([]im.SeqState, error) {
	known := l.lastLists.get(userID)
	cached, guessed, cacheErr := l.cache.GetConversationListWithStates(ctx, userID, known)
	ids, complete, err := l.listFrom(ctx, userID, cached, cacheErr)
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
	if fillOrder && complete && cacheErr == nil {
		l.fillOrder(ctx, userID, version, states[0])
	}
	return im.ByActivity(states[0]), nil
}

// fillOrder caches userID's order made of the whole list, as read at version, with its states.
func (l *Ledger) fillOrder(ctx context.Context, userID, version string, states []im.SeqState) {
	var groups []string
	entries := make([]cache.OrderEntry, 0, len(states))
	for _, st := range states {
		if conv, err := im.ParseConversationID(st.ConversationID); err == nil && conv.Kind.IsGroup() {
			groups = append(groups, st.ConversationID)
		} else if st.MaxSeq > 0 {
			entries = append(entries, cache.OrderEntry{ConversationID: st.ConversationID, Time: st.LastTime})
		}
	}
	if err := l.cache.FillConversationOrder(ctx, userID, version, groups, entries, MaxConversationsPerUser); err != nil {
		l.opts.Logger.WarnContext(ctx, "filling the conversation order cache failed", "err", err)
	}
}

// shortList is the longest list a page reads whole, when this instance remembers it
// (lastLists): its version and all its states in one round trip cost less than the order's
// script and its answer (docs/performance.md).
const shortList = 64

// ConversationPage returns the page of at most n of userID's conversations after the position
// after (nil: the first page), newest activity first, with their states: what
// im.PageAfter cuts from UserConversations, without reading the whole list. One Redis round
// trip reads the page's place in the user's order, the user's groups, and the states of the
// conversations this instance's last page of the user needed (lastPages); conversations it
// did not guess cost one more. A group's conversations are placed by their states, so a page
// reads every group's state however many conversations the list holds besides. When the order
// is not cached (or Redis fails) the page is cut from the whole list, which fills the order; so
// is it from a short list (shortList).
func (l *Ledger) ConversationPage(ctx context.Context, userID string, after *im.ListPosition, n int) (im.ConversationPage, error) {
	if known := l.lastLists.get(userID); known.IDs != nil && len(known.IDs) <= shortList {
		list, err := l.wholeList(ctx, userID, false)
		if err != nil {
			return im.ConversationPage{}, err
		}
		return im.PageAfter(list, after, n), nil
	}
	guess := l.lastPages.get(userID).IDs
	ordered, guessed, err := l.cache.GetConversationPage(ctx, userID, after, n+1, guess)
	if err != nil {
		l.opts.Logger.WarnContext(ctx, "reading the whole conversation list: cache failed", "err", err)
	}
	if err != nil || !ordered.Cached || ordered.Size <= shortList {
		// Read whole, a short list is remembered (lastLists) and read so from then on.
		list, err := l.wholeList(ctx, userID, err == nil && !ordered.Cached)
		if err != nil {
			return im.ConversationPage{}, err
		}
		return im.PageAfter(list, after, n), nil
	}
	need := make([]string, 0, len(ordered.Entries)+len(ordered.Groups))
	for _, e := range ordered.Entries {
		need = append(need, e.ConversationID)
	}
	need = append(need, ordered.Groups...)
	states, err := l.pageStates(ctx, userID, need, guess, guessed)
	if err != nil {
		return im.ConversationPage{}, err
	}
	l.lastPages.remember(userID, need, "")
	type placed struct {
		st im.SeqState
		at int64 // the time the conversation is ordered by
	}
	all := make([]placed, 0, len(need))
	for i, e := range ordered.Entries {
		// A send after the order was read shows in the state, not yet in the page's order.
		all = append(all, placed{states[i], e.Time})
	}
	for _, st := range states[len(ordered.Entries):] {
		if st.MaxSeq > 0 && (after == nil || after.Precedes(st.LastTime, st.ConversationID)) {
			all = append(all, placed{st, st.LastTime})
		}
	}
	slices.SortFunc(all, func(a, b placed) int {
		if c := cmp.Compare(b.at, a.at); c != 0 {
			return c
		}
		return strings.Compare(a.st.ConversationID, b.st.ConversationID)
	})
	page := im.ConversationPage{HasMore: len(all) > n}
	all = all[:min(n, len(all))]
	page.States = make([]im.SeqState, len(all))
	for i, p := range all {
		page.States[i] = p.st
	}
	if len(all) > 0 {
		last := all[len(all)-1]
		page.End = im.ListPosition{Time: last.at, ConversationID: last.st.ConversationID}
	}
	return page, nil
}

// pageStates returns userID's states in the conversations need, aligned with it: those that
// the read of the order found fully cached under guess as read there, the rest read now (Redis,
// then MongoDB for what it misses).
func (l *Ledger) pageStates(ctx context.Context, userID string, need, guess []string, guessed cache.States) ([]im.SeqState, error) {
	at := make(map[string]int, len(guess))
	if len(guessed.Conversations) == 1 && len(guessed.Users) == 1 {
		for i, id := range guess {
			if guessed.Conversations[0][i].Cached && guessed.Users[0][i].Cached {
				at[id] = i
			}
		}
	}
	out := make([]im.SeqState, len(need))
	var rest []string
	var restAt []int
	for i, id := range need {
		j, ok := at[id]
		if !ok {
			rest, restAt = append(rest, id), append(restAt, i)
			continue
		}
		cv, us := guessed.Conversations[0][j], guessed.Users[0][j]
		out[i] = im.SeqState{ConversationID: id, MaxSeq: cv.MaxSeq, MinSeq: cv.MinSeq, LastTime: cv.LastTime,
			ReadSeq: us.ReadSeq, UserMinSeq: us.UserMinSeq, ChunksVersion: cv.ChunksVersion}
	}
	if len(rest) == 0 {
		return out, nil
	}
	read, _, err := l.statesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: rest}}, false)
	if err != nil {
		return nil, err
	}
	for k, i := range restAt {
		out[i] = read[0][k]
	}
	return out, nil
}

// conversationList returns the IDs on userID's conversation list: from Redis, else from
// MongoDB, and then into Redis unless a change came meanwhile. A Redis failure is logged and
// served from MongoDB.
func (l *Ledger) conversationList(ctx context.Context, userID string) ([]string, error) {
	ids, _, err := l.versionedList(ctx, userID)
	return ids, err
}

// versionedList is conversationList with the list's version in Redis as read before the list
// ("" when unknown): while Redis still holds that version, the list has not changed since.
func (l *Ledger) versionedList(ctx context.Context, userID string) ([]string, string, error) {
	cached, cacheErr := l.cache.GetConversationList(ctx, userID)
	ids, _, err := l.listFrom(ctx, userID, cached, cacheErr)
	if cacheErr != nil {
		cached.Version = ""
	}
	return ids, cached.Version, err
}

// listFrom completes a read of userID's cached list (cacheErr: it failed): the cached IDs, else
// the list from MongoDB, filled into Redis when Redis answered. complete is false when the list
// may have been cut short at MaxConversationsPerUser.
func (l *Ledger) listFrom(ctx context.Context, userID string, cached cache.ConversationList, cacheErr error) (ids []string, complete bool, err error) {
	if cacheErr != nil {
		l.opts.Logger.WarnContext(ctx, "reading the conversation list from MongoDB: cache failed", "err", cacheErr)
	} else if cached.Cached {
		return cached.IDs[:min(len(cached.IDs), MaxConversationsPerUser)], len(cached.IDs) <= MaxConversationsPerUser, nil
	}
	lists, err := l.lists.load(ctx, []string{userID})
	if err != nil {
		return nil, false, err
	}
	list := lists[userID]
	// A list read cut short at the limit is not cached: it names an arbitrary part of the list.
	if cacheErr == nil && !list.Truncated {
		if err := l.cache.FillConversationList(ctx, userID, cached.Version, list.IDs); err != nil {
			l.opts.Logger.WarnContext(ctx, "filling the conversation list cache failed", "err", err)
		}
	}
	return list.IDs, !list.Truncated, nil
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
