package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/msggate/msggate/internal/im"
)

// chunkCond is a condition on a chunk's slots in the two forms a conditional write needs: a
// filter, which MongoDB checks atomically with the write, and the same test in Go. On FerretDB
// a filter of more than a bare _id makes every update decode the whole collection
// (natural_keys.go), and FerretDB does not apply it atomically anyway (doc_lock.go); there the
// chunk is read by _id under the document's lock, tested in Go, and written by _id, which the
// lock makes as safe as FerretDB's own read, change and write back.
type chunkCond struct {
	filter bson.D
	holds  func(*im.Chunk) bool
}

// chunkFilter finds the chunk docID, with cond's filter added.
func (s *Store) chunkFilter(docID string, cond bson.D) bson.D {
	return append(s.keyFilter(CollectionChunks, docID, bson.D{{Key: "doc_id", Value: docID}}), cond...)
}

// testedUnderLock reports whether conditional writes of chunks are tested in Go (see chunkCond).
func (s *Store) testedUnderLock() bool { return s.ferret && s.natural[CollectionChunks] }

// chunkUpdate is what became of a conditional update of a chunk.
type chunkUpdate struct {
	matched, modified bool
	// read: the chunk was read to test the condition, and chunk is what was read (nil: no
	// such document), so a caller that needs it after a miss need not read it again.
	read  bool
	chunk *im.Chunk
}

// updateChunk applies update to the chunk docID if cond holds (a zero cond always holds),
// under the document's lock.
func (s *Store) updateChunk(ctx context.Context, op, docID string, cond chunkCond, update bson.D) (chunkUpdate, error) {
	lctx, unlock, err := s.lockDocs(ctx, CollectionChunks, docID)
	if err != nil {
		return chunkUpdate{}, err
	}
	defer unlock()
	var out chunkUpdate
	filter := s.chunkFilter(docID, cond.filter)
	if cond.holds != nil && s.testedUnderLock() {
		if out.chunk, err = s.findChunk(lctx, docID); err != nil {
			return chunkUpdate{}, err
		}
		out.read = true
		if out.chunk == nil || !cond.holds(out.chunk) {
			return out, nil
		}
		filter = s.chunkFilter(docID, nil)
	}
	res, err := s.chunks.UpdateOne(lctx, filter, update)
	if err != nil {
		return chunkUpdate{}, storeError(op, err)
	}
	out.matched, out.modified = res.MatchedCount == 1, res.ModifiedCount == 1
	return out, nil
}

// deleteChunk deletes the chunk docID if cond holds, under the document's lock.
func (s *Store) deleteChunk(ctx context.Context, op, docID string, cond chunkCond) (bool, error) {
	lctx, unlock, err := s.lockDocs(ctx, CollectionChunks, docID)
	if err != nil {
		return false, err
	}
	defer unlock()
	filter := s.chunkFilter(docID, cond.filter)
	if cond.holds != nil && s.testedUnderLock() {
		c, err := s.findChunk(lctx, docID)
		if err != nil || c == nil || !cond.holds(c) {
			return false, err
		}
		filter = s.chunkFilter(docID, nil)
	}
	var res *mongo.DeleteResult
	if res, err = s.chunks.DeleteOne(lctx, filter); err != nil {
		return false, storeError(op, err)
	}
	return res.DeletedCount == 1, nil
}

// slotsEmpty is the condition that the slots of seqs hold no message. A slot missing from a
// short chunk counts as empty, as the filter's null matches a missing field.
func slotsEmpty(seqs []int64) chunkCond {
	filter := bson.D{}
	for _, seq := range seqs {
		filter = append(filter, bson.E{Key: slotPath(seq) + ".msg", Value: nil})
	}
	return chunkCond{filter: filter, holds: func(c *im.Chunk) bool {
		for _, seq := range seqs {
			if slot := c.Slot(seq); slot != nil && slot.Msg != nil {
				return false
			}
		}
		return true
	}}
}
