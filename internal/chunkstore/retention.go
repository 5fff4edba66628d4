package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// The store operations of the retention job (package retention decides what to delete; these
// only read and delete). Each is one plain find or delete, so they work on MongoDB and FerretDB
// alike, and each is bounded: a page of seq documents, a range of chunk indexes.

// MaxConversationPage bounds one page of ListConversationSeqs.
const MaxConversationPage = 1000

// MaxChunkRange bounds how many chunk indexes one FindChunkRange call may name.
const MaxChunkRange = 200

// ListConversationSeqs returns up to limit seq documents whose conversation ID sorts after
// after ("" starts at the beginning), in conversation ID order. The unique index on
// conversation_id serves both the range and the order, so a full pass over the collection is
// a series of short index scans, and a pass survives conversations created or removed while
// it runs (it resumes after the last ID it saw). limit is clamped to 1..MaxConversationPage.
func (s *Store) ListConversationSeqs(ctx context.Context, after string, limit int) ([]ConversationSeqs, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	limit = min(max(limit, 1), MaxConversationPage)
	cur, err := s.seqs.Find(ctx,
		bson.D{{Key: "conversation_id", Value: bson.D{{Key: "$gt", Value: after}}}},
		options.Find().SetSort(bson.D{{Key: "conversation_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, storeError("list seqs", err)
	}
	var docs []ConversationSeqs
	if err := cur.All(ctx, &docs); err != nil {
		return nil, storeError("list seqs", err)
	}
	return docs, nil
}

// FindChunkRange reads a conversation's chunks with indexes from..to (inclusive) in one $in
// query on doc_id. The result is aligned with the indexes: result[i] is chunk from+i, nil when
// that document does not exist. Doc IDs are computed, not listed: a conversation's chunk IDs
// do not sort by index as strings ("c:10" < "c:9"), and naming them costs nothing for the
// indexes that are absent. At most MaxChunkRange indexes.
func (s *Store) FindChunkRange(ctx context.Context, conversationID string, from, to int64) ([]*im.Chunk, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if from < 0 || to < from {
		return nil, nil
	}
	if to-from+1 > MaxChunkRange {
		return nil, im.Errorf(im.EINTERNAL, "chunk range %d..%d is longer than %d", from, to, MaxChunkRange)
	}
	ids := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		ids = append(ids, im.ChunkDocID(conversationID, i))
	}
	return s.FindChunks(ctx, ids)
}

// DeleteChunks deletes whole chunk documents by doc ID in one delete and returns how many
// existed. The caller must already have made every seq in them unreadable (the conversation's
// min seq is above them) and must invalidate their cached copies afterwards. The documents are
// locked like every chunk update: on FerretDB an update that overlapped the delete could
// otherwise write the chunk back.
func (s *Store) DeleteChunks(ctx context.Context, docIDs []string) (int64, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	if len(docIDs) == 0 {
		return 0, nil
	}
	ctx, unlock, err := s.lockDocs(ctx, CollectionChunks, docIDs...)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if s.natural[CollectionChunks] {
		return deleteByIDs(ctx, s.chunks, "delete chunks", docIDs)
	}
	res, err := s.chunks.DeleteMany(ctx, bson.D{{Key: "doc_id", Value: bson.D{{Key: "$in", Value: docIDs}}}})
	if err != nil {
		return 0, storeError("delete chunks", err)
	}
	return res.DeletedCount, nil
}

// DeleteChunkIfEmptyAbove deletes the chunk that holds seq only while every slot of it above
// seq is still empty, and reports whether it did. This is the delete for a chunk whose upper
// slots are not yet (or never were) written, such as the chunk holding a conversation's max
// seq: a sender may be writing the next seq into it at this moment, and the condition makes
// the delete lose that race instead of deleting a new message. The check and the delete are
// one operation on MongoDB; on FerretDB the document lock orders it against slot writes, which
// take the same lock.
func (s *Store) DeleteChunkIfEmptyAbove(ctx context.Context, conversationID string, seq int64) (bool, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	if err := im.ValidateSeq(seq); err != nil {
		return false, err
	}
	docID := im.DocID(conversationID, seq)
	var above []int64
	for slot := im.SlotIndex(seq) + 1; slot < im.ChunkSize; slot++ {
		above = append(above, seq+int64(slot-im.SlotIndex(seq)))
	}
	// null also matches a missing field, so a damaged short chunk counts as empty there.
	return s.deleteChunk(ctx, "delete chunk", docID, slotsEmpty(above))
}
