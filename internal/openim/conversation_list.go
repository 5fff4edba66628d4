package openim

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// UserConversations returns userID's conversations, the ones OpenIM keeps a conversation
// document for (owner_user_id = userID, model/conversation.go), with their seq states, newest
// activity first and ties by conversation ID. Activity is MALLOC_SEQ's TIME, the time of the
// conversation's last seq allocation, which is when its newest message arrived. As in msggate's
// own list (and in OpenIM's GetMaxSeq), conversations without any message are left out.
// Notification conversations are readable (CanRead) but, having no document, not listed.
//
// Cost: one query on conversation for the list (at most Options.MaxConversations documents),
// then States. Errors: EINVALID for a bad user ID, EUNAVAILABLE when a store fails.
func (s *Store) UserConversations(ctx context.Context, userID string) ([]im.SeqState, error) {
	ids, err := s.ConversationIDs(ctx, userID)
	if err != nil {
		return nil, err
	}
	states, err := s.States(ctx, userID, ids)
	if err != nil {
		return nil, err
	}
	return im.ByActivity(states), nil
}

// ConversationIDs returns the IDs of userID's conversation documents (at most
// Options.MaxConversations), in ID order: one query on conversation.
func (s *Store) ConversationIDs(ctx context.Context, userID string) ([]string, error) {
	if err := validUserID(userID); err != nil {
		return nil, err
	}
	opts := options.Find().
		SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "conversation_id", Value: 1}}).
		SetSort(bson.D{{Key: "conversation_id", Value: 1}}).
		SetLimit(int64(s.opts.maxConversations()))
	cur, err := s.conversation.Find(ctx, bson.D{{Key: "owner_user_id", Value: userID}}, opts)
	if err != nil {
		return nil, mongoError("find conversation", err)
	}
	var docs []struct {
		ConversationID string `bson:"conversation_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, mongoError("find conversation", err)
	}
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		// A document whose ID has no OpenIM prefix cannot be addressed by clients either.
		if validConversationID(d.ConversationID) == nil {
			ids = append(ids, d.ConversationID)
		}
	}
	return ids, nil
}

// FollowedConversationIDs is ConversationIDs less the group conversations whose group the user
// is no longer a member of: OpenIM keeps a member's conversation document when they quit or
// are kicked (and caps what they read), but a device must stop following the group's changes.
// One more query, on group_member, for the list's groups.
func (s *Store) FollowedConversationIDs(ctx context.Context, userID string) ([]string, error) {
	ids, err := s.ConversationIDs(ctx, userID)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, id := range ids {
		if g, ok := groupOf(id); ok {
			groups = append(groups, g)
		}
	}
	members, err := s.memberOf(ctx, userID, groups)
	if err != nil {
		return nil, err
	}
	out := ids[:0]
	for _, id := range ids {
		if g, ok := groupOf(id); !ok || members[g] {
			out = append(out, id)
		}
	}
	return out, nil
}
