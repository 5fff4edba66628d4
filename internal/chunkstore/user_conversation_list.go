package chunkstore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CollectionUserLists holds each user's conversation list as one document, {_id: "<userID>",
// conversation_ids: [...]}, beside the entries of CollectionUserConversation, so that the
// lists of users Redis does not know (a reconnect storm's start) are finds by _id: FerretDB
// answers the query by user_id on the entries with a scan of every user's entries. Written
// after the entries by the same calls (AddUserConversations, RemoveUserConversation), under
// the document's lock, so a list document never names a conversation whose entry is gone;
// a change that fails between the two is completed by its retry, as the entries' callers do.
const CollectionUserLists = "user_conversation_list"

// userListDoc is one user's list document.
type userListDoc struct {
	UserID          string   `bson:"_id"`
	ConversationIDs []string `bson:"conversation_ids"`
}

// openUserLists says whether the Store keeps and reads the list documents. A store whose
// entries were written without them (by an earlier version) has none to read, so only a
// store whose entries were empty when a Store first opened it gets the record
// {_id: CollectionUserLists, natural_ids: true} and keeps them; an earlier store's lists are
// read from the entries, as before.
func openUserLists(ctx context.Context, db *mongo.Database) (bool, error) {
	layouts := db.Collection(CollectionLayout)
	var rec layoutDoc
	err := layouts.FindOne(ctx, bson.D{{Key: "_id", Value: CollectionUserLists}}).Decode(&rec)
	if err == nil {
		return rec.NaturalIDs, createUserLists(ctx, db, rec.NaturalIDs)
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return false, storeError("read store layout", err)
	}
	err = db.Collection(CollectionUserConversation).FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, mongo.ErrNoDocuments):
		return false, storeError("read store layout", err)
	}
	_, err = layouts.InsertOne(ctx, layoutDoc{ID: CollectionUserLists, NaturalIDs: true})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return false, storeError("record store layout", err)
	}
	return true, createUserLists(ctx, db, true)
}

// createUserLists creates the list documents' collection at Open, before any is written, so
// that the embedded store's _id index (made once the collections exist) covers it too.
func createUserLists(ctx context.Context, db *mongo.Database, kept bool) error {
	if !kept {
		return nil
	}
	err := db.CreateCollection(ctx, CollectionUserLists)
	var ce mongo.CommandError
	if err != nil && !(errors.As(err, &ce) && ce.Code == namespaceExists) {
		return storeError("create "+CollectionUserLists, err)
	}
	return nil
}

// namespaceExists is the server's error code for a collection that exists already.
const namespaceExists = 48

// changeUserLists adds (add) or removes conversations on users' list documents, updateBatch
// users per command, each batch under its documents' locks (on FerretDB an update is a read
// and a write of the whole document).
func (s *Store) changeUserLists(ctx context.Context, op string, byUser map[string][]string, add bool) error {
	if !s.natural[CollectionUserLists] || len(byUser) == 0 {
		return nil
	}
	users := make([]string, 0, len(byUser))
	models := make([]mongo.WriteModel, 0, len(byUser))
	for u, convs := range byUser {
		users = append(users, u)
		update := bson.D{{Key: "$pullAll", Value: bson.D{{Key: "conversation_ids", Value: convs}}}}
		if add {
			update = bson.D{{Key: "$addToSet", Value: bson.D{{Key: "conversation_ids", Value: bson.D{{Key: "$each", Value: convs}}}}}}
		}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: u}}).
			SetUpdate(update).
			SetUpsert(add))
	}
	return inBatchesOf(updateBatch, len(models), func(from, to int) error {
		lctx, unlock, err := s.lockDocs(ctx, CollectionUserLists, users[from:to]...)
		if err != nil {
			return err
		}
		defer unlock()
		return bulkUpsert(lctx, s.db.Collection(CollectionUserLists), op, models[from:to])
	})
}

// findUserLists reads users' list documents by _id (findByIDs); a user without one has an
// empty list.
func (s *Store) findUserLists(ctx context.Context, userIDs []string, limit int) (lists map[string][]string, truncated map[string]bool, err error) {
	docs, err := findByIDs[userListDoc](ctx, s, s.db.Collection(CollectionUserLists), "find user lists", userIDs)
	if err != nil {
		return nil, nil, err
	}
	lists, truncated = make(map[string][]string, len(docs)), map[string]bool{}
	for _, d := range docs {
		if len(d.ConversationIDs) == 0 {
			continue // every conversation removed ($pullAll leaves the document): no list, as the entries read
		}
		if len(d.ConversationIDs) > limit {
			truncated[d.UserID] = true
			d.ConversationIDs = d.ConversationIDs[:limit]
		}
		lists[d.UserID] = d.ConversationIDs
	}
	return lists, truncated, nil
}
