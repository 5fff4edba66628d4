package sync

import (
	"context"
	"slices"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Memberships reports, for each conversation, whether userID belongs to it: single chats by
// their ID, a user's notification conversation by its owner, groups (and their notification
// conversations) by the member list, as the cache holds it (groupRoles).
func (l *Ledger) Memberships(ctx context.Context, userID string, convs []im.Conversation) ([]bool, error) {
	out, _, err := l.access(ctx, userID, convs, false)
	return out, err
}

// access is Memberships that, with withStates, also reads userID's states in convs in the
// round trip that asks for memberships, when one is needed (a group is among them): a state
// is given where the cache held all of it and the conversation is readable, else it has no
// ConversationID.
func (l *Ledger) access(ctx context.Context, userID string, convs []im.Conversation, withStates bool) ([]bool, []im.SeqState, error) {
	out := make([]bool, len(convs))
	var groups []string
	for i, c := range convs {
		switch c.Kind {
		case im.SingleChat:
			out[i] = c.Peer(userID) != ""
		case im.UserNotification:
			out[i] = c.UserIDs[0] == userID
		case im.GroupChat, im.GroupNotification:
			if !slices.Contains(groups, c.GroupID) {
				groups = append(groups, c.GroupID)
			}
		}
	}
	if len(groups) == 0 {
		return out, nil, nil
	}
	var query []cache.StateQuery
	if withStates {
		ids := make([]string, len(convs))
		for i, c := range convs {
			ids[i] = c.ID
		}
		query = []cache.StateQuery{{UserID: userID, ConversationIDs: ids}}
	}
	roles, cached, err := l.groupRoles(ctx, userID, groups, query)
	if err != nil {
		return nil, nil, err
	}
	for i, c := range convs {
		if c.Kind == im.GroupChat || c.Kind == im.GroupNotification {
			_, out[i] = roles[c.GroupID]
		}
	}
	if len(cached.Conversations) == 0 {
		return out, nil, nil
	}
	states := make([]im.SeqState, len(convs))
	for i, c := range convs {
		cv, us := cached.Conversations[0][i], cached.Users[0][i]
		if out[i] && cv.Cached && us.Cached {
			states[i] = im.SeqState{ConversationID: c.ID, MaxSeq: cv.MaxSeq, MinSeq: cv.MinSeq, LastTime: cv.LastTime,
				ReadSeq: us.ReadSeq, UserMinSeq: us.UserMinSeq, ChunksVersion: cv.ChunksVersion}
		}
	}
	return out, states, nil
}

// groupRoles returns userID's role in each group they are a member of (a group they are not
// in is absent), and the
// states asked for by states, read in the same Redis round trip (empty when Redis failed).
// A warm read is that round trip alone; what Redis misses, or a writer holds, is one MongoDB
// query for all such groups (by _id: one document per group, whatever its size), then, for
// the misses, one round trip to fill. A Redis failure is logged and answered from MongoDB, the
// truth, never taken as "member" or "not a member".
func (l *Ledger) groupRoles(ctx context.Context, userID string, groups []string, states []cache.StateQuery) (map[string]int32, cache.States, error) {
	cached, st, cacheErr := l.cache.GetMemberships(ctx, cache.MembershipQuery{UserID: userID, GroupIDs: groups}, states)
	roles := make(map[string]int32, len(groups))
	var ask []string
	if cacheErr != nil {
		l.opts.Logger.WarnContext(ctx, "reading group memberships from MongoDB: cache failed", "err", cacheErr)
		ask = groups
	} else {
		for i, m := range cached {
			switch {
			case m.Cached && m.Member:
				roles[groups[i]] = m.Role
			case !m.Cached:
				ask = append(ask, groups[i])
			}
		}
	}
	if len(ask) == 0 {
		return roles, st, nil
	}
	found, err := l.store.FindGroupMemberships(ctx, userID, ask)
	if err != nil {
		return nil, cache.States{}, err
	}
	var fills []cache.MembershipFill
	for i, g := range groups {
		if !slices.Contains(ask, g) {
			continue
		}
		m, member := found[g]
		if member {
			roles[g] = m.Role
		}
		if cacheErr == nil && !cached[i].Held {
			fills = append(fills, cache.MembershipFill{GroupID: g, Version: cached[i].Version, Member: member, Role: m.Role})
		}
	}
	if err := l.cache.FillMemberships(ctx, userID, fills); err != nil {
		l.opts.Logger.WarnContext(ctx, "filling the group membership cache failed", "err", err)
	}
	return roles, st, nil
}

// heldMembers returns the users whose membership a change of the group's member list from
// before to after adds, removes or gives another role: those HoldMemberships must hold.
func heldMembers(before, after []chunkstore.GroupMember) []string {
	old := make(map[string]int32, len(before))
	for _, m := range before {
		old[m.UserID] = m.Role
	}
	var out []string
	for _, m := range after {
		if role, ok := old[m.UserID]; !ok || role != m.Role {
			out = append(out, m.UserID)
		}
		delete(old, m.UserID)
	}
	for _, m := range before {
		if _, gone := old[m.UserID]; gone {
			out = append(out, m.UserID)
		}
	}
	return out
}

// ParseConversationID checks a conversation ID by the rules of the conversations the ledger
// keeps, msggate's own (im.ParseConversationID).
func (l *Ledger) ParseConversationID(id string) (im.Conversation, error) {
	return im.ParseConversationID(id)
}

// CanRead reports, aligned with conversationIDs, whether userID may read each conversation
// (Memberships, for IDs not yet parsed). A malformed ID is EINVALID.
func (l *Ledger) CanRead(ctx context.Context, userID string, conversationIDs []string) ([]bool, error) {
	convs, err := parseConversationIDs(conversationIDs)
	if err != nil {
		return nil, err
	}
	return l.Memberships(ctx, userID, convs)
}

// CanReadWithStates is CanRead that also returns userID's state in the conversations it read
// with the memberships (aligned with conversationIDs; a state without ConversationID was not
// read): deciding a group's access costs a round trip, and a page of the group needs its state
// next, so the two share it. A single chat's access needs no round trip, and reads no state.
func (l *Ledger) CanReadWithStates(ctx context.Context, userID string, conversationIDs []string) ([]bool, []im.SeqState, error) {
	convs, err := parseConversationIDs(conversationIDs)
	if err != nil {
		return nil, nil, err
	}
	return l.access(ctx, userID, convs, true)
}

func parseConversationIDs(ids []string) ([]im.Conversation, error) {
	convs := make([]im.Conversation, len(ids))
	for i, id := range ids {
		c, err := im.ParseConversationID(id)
		if err != nil {
			return nil, err
		}
		convs[i] = c
	}
	return convs, nil
}
