package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CollectionUserConversation lists, per user, the conversations they have: written when a
// single chat or notification conversation gets its messages and when a group's member list
// changes. The viewer's conversation list is read from it.
const CollectionUserConversation = "user_conversation"

// UserConversation is one entry of a user's conversation list.
type UserConversation struct {
	UserID         string `bson:"user_id"`
	ConversationID string `bson:"conversation_id"`
}

// AddUserConversations puts conversations on users' lists, writeBatch entries per command;
// entries that exist stay as they are. With natural keys the entries are inserted and the
// duplicates (entries that exist) ignored; a legacy collection is upserted by field.
func (s *Store) AddUserConversations(ctx context.Context, entries []UserConversation) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	if len(entries) == 0 {
		return nil
	}
	if s.natural[CollectionUserConversation] {
		docs := make([]any, len(entries))
		for i, e := range entries {
			id, err := pairKey(e.UserID, e.ConversationID)
			if err != nil {
				return err
			}
			docs[i] = bson.D{{Key: "_id", Value: id}, {Key: "user_id", Value: e.UserID}, {Key: "conversation_id", Value: e.ConversationID}}
		}
		if _, err := insertNew(ctx, s.userConversations, "add user conversations", docs); err != nil {
			return err
		}
		return s.changeUserLists(ctx, "add user conversations", listsOf(entries), true)
	}
	models := make([]mongo.WriteModel, 0, len(entries))
	for _, e := range entries {
		fields := bson.D{{Key: "user_id", Value: e.UserID}, {Key: "conversation_id", Value: e.ConversationID}}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(fields).
			SetUpdate(bson.D{{Key: "$setOnInsert", Value: fields}}).
			SetUpsert(true))
	}
	if err := inBatches(len(models), func(from, to int) error {
		return bulkUpsert(ctx, s.userConversations, "add user conversations", models[from:to])
	}); err != nil {
		return err
	}
	return s.changeUserLists(ctx, "add user conversations", listsOf(entries), true)
}

// listsOf groups entries by user.
func listsOf(entries []UserConversation) map[string][]string {
	out := map[string][]string{}
	for _, e := range entries {
		out[e.UserID] = append(out[e.UserID], e.ConversationID)
	}
	return out
}

// RemoveUserConversation takes a conversation off the lists of the given users, writeBatch
// users per command.
func (s *Store) RemoveUserConversation(ctx context.Context, conversationID string, userIDs []string) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	err = inBatches(len(userIDs), func(from, to int) error {
		batch := userIDs[from:to]
		if s.natural[CollectionUserConversation] {
			ids := make([]string, len(batch))
			for i, u := range batch {
				id, err := pairKey(u, conversationID)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			_, err := deleteByIDs(ctx, s.userConversations, "remove user conversations", ids)
			return err
		}
		_, err := s.userConversations.DeleteMany(ctx, bson.D{
			{Key: "conversation_id", Value: conversationID},
			{Key: "user_id", Value: bson.D{{Key: "$in", Value: batch}}},
		})
		return storeError("remove user conversations", err)
	})
	if err != nil {
		return err
	}
	byUser := make(map[string][]string, len(userIDs))
	for _, u := range userIDs {
		byUser[u] = []string{conversationID}
	}
	return s.changeUserLists(ctx, "remove user conversations", byUser, false)
}

// FindUsersConversations returns the IDs of each user's conversations, at most limit per user
// (a user cut short at limit is named in truncated), in one query by user_id: FerretDB answers
// a query on a field other than _id with a scan of the collection, so the users whose lists
// are read together share one scan.
func (s *Store) FindUsersConversations(ctx context.Context, userIDs []string, limit int) (lists map[string][]string, truncated map[string]bool, err error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	lists, truncated = make(map[string][]string, len(userIDs)), map[string]bool{}
	if len(userIDs) == 0 {
		return lists, truncated, nil
	}
	if s.natural[CollectionUserLists] {
		return s.findUserLists(ctx, userIDs, limit)
	}
	cur, err := s.userConversations.Find(ctx, bson.D{{Key: "user_id", Value: bson.D{{Key: "$in", Value: userIDs}}}},
		options.Find().SetProjection(bson.D{{Key: "user_id", Value: 1}, {Key: "conversation_id", Value: 1}}))
	if err != nil {
		return nil, nil, storeError("find user conversations", err)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var d UserConversation
		if err := cur.Decode(&d); err != nil {
			return nil, nil, storeError("find user conversations", err)
		}
		if len(lists[d.UserID]) >= limit {
			truncated[d.UserID] = true
			continue
		}
		lists[d.UserID] = append(lists[d.UserID], d.ConversationID)
	}
	if err := cur.Err(); err != nil {
		return nil, nil, storeError("find user conversations", err)
	}
	return lists, truncated, nil
}
