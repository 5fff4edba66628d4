package chunkstore

import (
	"context"
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ConversationSeqs is a conversation's document in the seq collection.
type ConversationSeqs struct {
	ConversationID string `bson:"conversation_id"`
	// MaxSeq is the highest seq holding a stored message.
	MaxSeq int64 `bson:"max_seq"`
	// MinSeq is the lowest seq still readable (retention, clear for everyone); 0 means 1.
	MinSeq int64 `bson:"min_seq"`
	// ReservedSeq is the end of the last seq block handed to the allocator.
	ReservedSeq int64 `bson:"reserved_seq"`
	// LastTime is the send time (ms) of the newest stored message: the conversation's activity.
	LastTime int64 `bson:"last_time"`
}

// StoredMax is what one write stored in a conversation: its highest seq and newest send time.
type StoredMax struct {
	Seq, Time int64
}

// ReserveSeqBlock reserves n more seqs of a conversation for the allocator and returns the
// conversation's document after the reservation; ReservedSeq is the new end of the reserved
// range and at least MaxSeq+n. MaxSeq in the answer tells the allocator where stored messages
// end, which is where it restarts after losing its state.
func (s *Store) ReserveSeqBlock(ctx context.Context, conversationID string, n int64) (ConversationSeqs, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return ConversationSeqs{}, err
	}
	defer done()
	doc, err := s.updateSeqDoc(ctx, conversationID, "$inc", n)
	if err == nil && doc.ReservedSeq < doc.MaxSeq+n {
		// A store written by another tool (an imported OpenIM database) may have messages above
		// its reserved range: move the reservation past them.
		doc, err = s.updateSeqDoc(ctx, conversationID, "$max", doc.MaxSeq+n)
	}
	return doc, err
}

func (s *Store) updateSeqDoc(ctx context.Context, conversationID, op string, v int64) (ConversationSeqs, error) {
	var doc ConversationSeqs
	var err error
	// An upsert that loses a race to create the document fails with a duplicate key; the
	// document exists by then, so the next attempt updates it.
	for attempt := 0; attempt < 3; attempt++ {
		lctx, unlock, lerr := s.lockDocs(ctx, CollectionSeqs, conversationID)
		if lerr != nil {
			return ConversationSeqs{}, lerr
		}
		err = s.seqs.FindOneAndUpdate(lctx,
			s.seqFilter(conversationID),
			s.seqUpdate(conversationID, bson.E{Key: op, Value: bson.D{{Key: "reserved_seq", Value: v}}}),
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After),
		).Decode(&doc)
		unlock()
		if !mongo.IsDuplicateKeyError(err) {
			break
		}
	}
	if err != nil {
		return ConversationSeqs{}, storeError("reserve seq block", err)
	}
	return doc, nil
}

// RaiseMaxSeqs records, per conversation, the highest seq now holding a stored message and the
// newest send time. $max makes both monotonic and safe under concurrent writers; all
// conversations go in one bulk write.
func (s *Store) RaiseMaxSeqs(ctx context.Context, stored map[string]StoredMax) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	values := make(map[string]bson.D, len(stored))
	for conv, m := range stored {
		values[conv] = bson.D{{Key: "max_seq", Value: m.Seq}, {Key: "last_time", Value: m.Time}}
	}
	return s.raise(ctx, "raise max seqs", values)
}

// RaiseMinSeq moves a conversation's min seq up (never down).
func (s *Store) RaiseMinSeq(ctx context.Context, conversationID string, minSeq int64) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	return s.raise(ctx, "raise min seq", map[string]bson.D{conversationID: {{Key: "min_seq", Value: minSeq}}})
}

// raise applies $max with the given fields to each conversation's seq document, updateBatch
// documents per command, each command under the locks of its own documents only: $max needs
// no more, and the time the leases are held stays that of one bounded command however many
// conversations a write touched.
func (s *Store) raise(ctx context.Context, op string, values map[string]bson.D) error {
	convs := make([]string, 0, len(values))
	for conv := range values {
		convs = append(convs, conv)
	}
	slices.Sort(convs)
	return inBatchesOf(updateBatch, len(convs), func(from, to int) error {
		batch := convs[from:to]
		models := make([]mongo.WriteModel, len(batch))
		for i, conv := range batch {
			models[i] = mongo.NewUpdateOneModel().
				SetFilter(s.seqFilter(conv)).
				SetUpdate(s.seqUpdate(conv, bson.E{Key: "$max", Value: values[conv]})).
				SetUpsert(true)
		}
		lctx, unlock, err := s.lockDocs(ctx, CollectionSeqs, batch...)
		if err != nil {
			return err
		}
		defer unlock()
		return bulkUpsert(lctx, s.seqs, op, models)
	})
}

// seqFilter finds a conversation's seq document.
func (s *Store) seqFilter(conversationID string) bson.D {
	return s.keyFilter(CollectionSeqs, conversationID, bson.D{{Key: "conversation_id", Value: conversationID}})
}

// seqUpdate is an upsert's update of a seq document. Found by _id, a new document gets its
// _id from the filter and its conversation_id from $setOnInsert; found by field, it gets the
// field from the filter.
func (s *Store) seqUpdate(conversationID string, op bson.E) bson.D {
	u := bson.D{op}
	if s.natural[CollectionSeqs] {
		u = append(u, bson.E{Key: "$setOnInsert", Value: bson.D{{Key: "conversation_id", Value: conversationID}}})
	}
	return u
}

// bulkUpsert runs upserts in unordered bulk writes of at most updateBatch each. Two concurrent upserts of the same new
// document can race on the unique index and the loser fails with a duplicate key; the document
// exists by then, so running the batch again applies the loser's update ($max and $setOnInsert
// updates are idempotent).
func bulkUpsert(ctx context.Context, c *mongo.Collection, op string, models []mongo.WriteModel) error {
	return inBatchesOf(updateBatch, len(models), func(from, to int) error {
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			_, err = c.BulkWrite(ctx, models[from:to], options.BulkWrite().SetOrdered(false))
			if err == nil || !allDuplicateKeys(err) {
				break
			}
		}
		return storeError(op, err)
	})
}

// FindConversationSeqs reads the seq documents of the conversations: by _id (findByIDs), or in
// one $in query on conversation_id in a collection of an earlier version.
// Conversations without a document (no message stored yet) are absent from the map.
func (s *Store) FindConversationSeqs(ctx context.Context, conversationIDs []string) (map[string]ConversationSeqs, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make(map[string]ConversationSeqs, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	var docs []ConversationSeqs
	if s.natural[CollectionSeqs] {
		docs, err = findByIDs[ConversationSeqs](ctx, s, s.seqs, "find seqs", conversationIDs)
	} else {
		docs, err = findAll[ConversationSeqs](ctx, s.seqs, "find seqs", bson.D{{Key: "conversation_id", Value: bson.D{{Key: "$in", Value: conversationIDs}}}})
	}
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		out[d.ConversationID] = d
	}
	return out, nil
}

// allDuplicateKeys reports whether every write error of a bulk write is a duplicate key.
func allDuplicateKeys(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}
