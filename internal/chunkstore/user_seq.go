package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// UserSeqs is one user's read state in one conversation (collection seq_user).
type UserSeqs struct {
	ConversationID string `bson:"conversation_id"`
	UserID         string `bson:"user_id"`
	// ReadSeq is the highest seq the user has read, on any device.
	ReadSeq int64 `bson:"read_seq"`
	// MinSeq is the lowest seq the user may see (after clearing history); 0 means no bound.
	MinSeq int64 `bson:"min_seq"`
}

// UserSeqKey names one user's state in one conversation.
type UserSeqKey struct {
	ConversationID string
	UserID         string
}

// RaiseReadSeqs moves read seqs up (never down) for many users and conversations in one bulk
// write.
func (s *Store) RaiseReadSeqs(ctx context.Context, readSeqs map[UserSeqKey]int64) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	return s.raiseUser(ctx, "raise read seqs", readSeqs, "read_seq")
}

// RaiseUserMinSeqs moves user min seqs up (never down), for clearing history.
func (s *Store) RaiseUserMinSeqs(ctx context.Context, minSeqs map[UserSeqKey]int64) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	return s.raiseUser(ctx, "raise user min seqs", minSeqs, "min_seq")
}

func (s *Store) raiseUser(ctx context.Context, op string, values map[UserSeqKey]int64, field string) error {
	if len(values) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, 0, len(values))
	keys := make([]string, 0, len(values))
	for k, v := range values {
		id, err := pairKey(k.ConversationID, k.UserID)
		if err != nil {
			return err
		}
		keys = append(keys, id)
		fields := bson.D{{Key: "conversation_id", Value: k.ConversationID}, {Key: "user_id", Value: k.UserID}}
		update := bson.D{{Key: "$max", Value: bson.D{{Key: field, Value: v}}}}
		if s.natural[CollectionUserSeqs] {
			update = append(update, bson.E{Key: "$setOnInsert", Value: fields})
		}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(s.keyFilter(CollectionUserSeqs, id, fields)).
			SetUpdate(update).
			SetUpsert(true))
	}
	// As raise: each bounded command under the locks of its own documents.
	return inBatchesOf(updateBatch, len(models), func(from, to int) error {
		lctx, unlock, err := s.lockDocs(ctx, CollectionUserSeqs, keys[from:to]...)
		if err != nil {
			return err
		}
		defer unlock()
		return bulkUpsert(lctx, s.userSeqs, op, models[from:to])
	})
}

// FindUserSeqs reads the given users' states: by _id (findByIDs), or in one query by field in
// a collection of an earlier version. Keys without a document (the user
// never read nor cleared) are absent from the map: their read and min seqs are 0.
func (s *Store) FindUserSeqs(ctx context.Context, keys []UserSeqKey) (map[UserSeqKey]UserSeqs, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make(map[UserSeqKey]UserSeqs, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	want := make(map[UserSeqKey]bool, len(keys))
	pairs := make([][2]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		want[k] = true
		pairs[i] = [2]string{k.ConversationID, k.UserID}
		id, err := pairKey(k.ConversationID, k.UserID)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	var docs []UserSeqs
	if s.natural[CollectionUserSeqs] {
		docs, err = findByIDs[UserSeqs](ctx, s, s.userSeqs, "find user seqs", ids)
	} else {
		docs, err = findAll[UserSeqs](ctx, s.userSeqs, "find user seqs", pairFilter("conversation_id", "user_id", pairs))
	}
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		k := UserSeqKey{ConversationID: d.ConversationID, UserID: d.UserID}
		if want[k] {
			out[k] = d
		}
	}
	return out, nil
}
