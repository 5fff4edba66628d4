package openim

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Who may read a conversation, from OpenIM's own records:
//
//   - a conversation the user has a conversation document for (owner_user_id, conversation_id).
//     OpenIM's pull (internal/rpc/msg/sync_msg.go PullMessageBySeqs) serves a chat conversation
//     only when that document exists. A user who quit or was kicked from a group keeps it and
//     reads up to the max seq OpenIM froze for them (see States).
//   - the notification conversation OpenIM pairs with each of those (n_ + the ID after its
//     first '_'), and the user's own n_<user>_<user>: the set GetMaxSeq (sync_msg.go) syncs.
//   - a group conversation (sg_<group>, g_<group>) of a group the user is a member of in
//     group_member (group_id, user_id): OpenIM creates members' conversation documents only
//     when the group's first message is sent or when they join, so a member may lack one.
//
// Nothing is inferred from the user IDs inside a conversation ID: a user whose ID equals a
// group's ID gets n_<group> only through a document that pairs with it, as in OpenIM.

// CanRead reports, aligned with conversationIDs, whether userID may read each conversation.
// It costs at most one query on conversation and one on group_member, whatever the number of
// conversations. Errors: EINVALID for a bad ID, EUNAVAILABLE when MongoDB fails.
func (s *Store) CanRead(ctx context.Context, userID string, conversationIDs []string) ([]bool, error) {
	if err := validUserID(userID); err != nil {
		return nil, err
	}
	if err := validConversationIDs(conversationIDs); err != nil {
		return nil, err
	}
	out := make([]bool, len(conversationIDs))
	self := selfNotification(userID)
	seen := map[string]bool{}
	var candidates []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			candidates = append(candidates, id)
		}
	}
	for _, c := range conversationIDs {
		if c == self {
			continue
		}
		add(c)
		for _, src := range notificationSources(c) {
			add(src)
		}
	}

	owned, err := s.ownedConversations(ctx, userID, candidates)
	if err != nil {
		return nil, err
	}
	readable := map[string]bool{self: true}
	for id := range owned {
		readable[id] = true
		if n, ok := notificationOf(id); ok {
			readable[n] = true
		}
	}

	var groups []string
	for _, c := range conversationIDs {
		if g, ok := groupOf(c); ok && !readable[c] {
			groups = append(groups, g)
		}
	}
	members, err := s.memberOf(ctx, userID, groups)
	if err != nil {
		return nil, err
	}
	for i, c := range conversationIDs {
		g, isGroup := groupOf(c)
		out[i] = readable[c] || (isGroup && members[g])
	}
	return out, nil
}

// ownedConversations returns which of ids the user has a conversation document for.
func (s *Store) ownedConversations(ctx context.Context, userID string, ids []string) (map[string]bool, error) {
	return s.memoFound(ctx, 'o', userID, ids, func(ids []string) (map[string]bool, error) {
		out := map[string]bool{}
		docs, err := findAll[struct {
			ConversationID string `bson:"conversation_id"`
		}](ctx, s.conversation, "find conversation",
			bson.D{{Key: "owner_user_id", Value: userID}, {Key: "conversation_id", Value: in(ids)}},
			bson.D{{Key: "_id", Value: 0}, {Key: "conversation_id", Value: 1}})
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out[d.ConversationID] = true
		}
		return out, nil
	})
}

// memoFound answers which of ids read finds, from the memo for those it found before (a
// refusal is never kept) and from read for the others.
func (s *Store) memoFound(_ context.Context, kind byte, userID string, ids []string, read func([]string) (map[string]bool, error)) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	if s.memo == nil {
		return read(ids)
	}
	var rest []string
	gens := map[string]uint64{}
	for _, id := range ids {
		if _, ok := s.memo.get(memoKey{kind, userID, id}); ok {
			out[id] = true
			continue
		}
		gens[id] = s.memo.generation(id)
		rest = append(rest, id)
	}
	if len(rest) == 0 {
		return out, nil
	}
	found, err := read(rest)
	if err != nil {
		return nil, err
	}
	for id := range found {
		out[id] = true
		s.memo.put(memoKey{kind, userID, id}, gens[id], true)
	}
	return out, nil
}

// memberOf returns which of groups the user is a member of.
func (s *Store) memberOf(ctx context.Context, userID string, groups []string) (map[string]bool, error) {
	return s.memoFound(ctx, 'm', userID, groups, func(groups []string) (map[string]bool, error) {
		out := map[string]bool{}
		docs, err := findAll[struct {
			GroupID string `bson:"group_id"`
		}](ctx, s.groupMember, "find group_member",
			bson.D{{Key: "user_id", Value: userID}, {Key: "group_id", Value: in(groups)}},
			bson.D{{Key: "_id", Value: 0}, {Key: "group_id", Value: 1}})
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out[d.GroupID] = true
		}
		return out, nil
	})
}

// InNow reports, aligned with conversationIDs, whether userID is in each conversation now: a
// member of a group conversation's group (group_member), and always for the others. CanRead
// also admits a member who left a group (OpenIM lets them read up to where they left); what
// must keep to the members of now, as message search does, asks this as well. It costs at most
// one query on group_member. Errors: EINVALID for a bad ID, EUNAVAILABLE when MongoDB fails.
func (s *Store) InNow(ctx context.Context, userID string, conversationIDs []string) ([]bool, error) {
	if err := validUserID(userID); err != nil {
		return nil, err
	}
	if err := validConversationIDs(conversationIDs); err != nil {
		return nil, err
	}
	var groups []string
	for _, c := range conversationIDs {
		if g, ok := groupOf(c); ok {
			groups = append(groups, g)
		}
	}
	members, err := s.memberOf(ctx, userID, groups)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(conversationIDs))
	for i, c := range conversationIDs {
		g, isGroup := groupOf(c)
		out[i] = !isGroup || members[g]
	}
	return out, nil
}
