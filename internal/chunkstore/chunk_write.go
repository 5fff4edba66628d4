package chunkstore

import (
	"context"
	"errors"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/msggate/msggate/internal/im"
)

// SlotOutcome says what became of one message handed to WriteMessages.
type SlotOutcome int

const (
	// Stored: this call wrote the message into its slot.
	Stored SlotOutcome = iota + 1
	// AlreadyStored: the slot already held this very message (same sender and client message
	// ID), written by an earlier attempt.
	AlreadyStored
	// Taken: the slot holds a different message. The seq was handed out twice (possible only
	// after the Redis allocator lost its state) and the message needs a new seq.
	Taken
)

// maxWriteAttempts bounds the update/insert/re-read cycle for one chunk. Each round either
// settles some slots or learns that the document now exists, so a few rounds always suffice
// unless the store misbehaves.
const maxWriteAttempts = 5

// WriteMessages writes messages of one conversation into the slots their seqs address. Every
// message must carry a valid, distinct Seq. All slots that fall into one chunk are written by
// one operation: a conditional $set of exactly those slots when the chunk exists, or an insert
// of the whole 100-slot chunk with the messages in place when it does not (tried first when
// the batch starts a chunk, since that chunk most likely does not exist yet). A slot that
// already holds a message is never overwritten: the update only matches while every target
// slot is empty. When it does not match, the chunk is read back once to tell retries
// (AlreadyStored) from collisions (Taken), and the remaining empty slots are written again.
//
// The outcomes are aligned with msgs. An error means some slots may be written and others not;
// calling again with the same messages is safe.
func (s *Store) WriteMessages(ctx context.Context, conversationID string, msgs []*im.Message) ([]SlotOutcome, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.writeMessages(ctx, conversationID, msgs, false)
}

// RewriteMessages is WriteMessages for messages that were probably stored already (retries of
// earlier sends): it reads each chunk first and writes only the slots still empty. On a large
// chunk that costs one read instead of a failing conditional update followed by the read.
func (s *Store) RewriteMessages(ctx context.Context, conversationID string, msgs []*im.Message) ([]SlotOutcome, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.writeMessages(ctx, conversationID, msgs, true)
}

func (s *Store) writeMessages(ctx context.Context, conversationID string, msgs []*im.Message, readFirst bool) ([]SlotOutcome, error) {
	outcomes := make([]SlotOutcome, len(msgs))
	seqs := make([]int64, len(msgs))
	bySeq := make(map[int64]int, len(msgs))
	for i, m := range msgs {
		if err := im.ValidateSeq(m.Seq); err != nil {
			return nil, err
		}
		if _, dup := bySeq[m.Seq]; dup {
			return nil, im.Errorf(im.EINTERNAL, "seq %d appears twice in one write", m.Seq)
		}
		bySeq[m.Seq] = i
		seqs[i] = m.Seq
	}
	for _, g := range im.GroupSeqsByDocID(conversationID, seqs) {
		pos := make([]int, len(g.Seqs))
		for j, seq := range g.Seqs {
			pos[j] = bySeq[seq]
		}
		if err := s.writeChunk(ctx, g.DocID, msgs, pos, outcomes, readFirst); err != nil {
			return outcomes, err
		}
	}
	return outcomes, nil
}

// The steps of writing one chunk.
const (
	stepInsert = iota // insert the whole chunk with the pending messages in place
	stepUpdate        // conditional $set of the pending slots
	stepRead          // read the chunk back to settle retries and collisions
)

func (s *Store) writeChunk(ctx context.Context, docID string, msgs []*im.Message, pending []int, outcomes []SlotOutcome, readFirst bool) error {
	sort.Slice(pending, func(a, b int) bool { return msgs[pending[a]].Seq < msgs[pending[b]].Seq })
	step := stepUpdate
	switch {
	case readFirst:
		step = stepRead
	case im.SlotIndex(msgs[pending[0]].Seq) == 0:
		step = stepInsert
	}
	stored := func() {
		for _, i := range pending {
			outcomes[i] = Stored
		}
		pending = nil
	}
	// settle sorts the pending messages by what the chunk holds in their slots: retries
	// (AlreadyStored) and collisions (Taken) are done, empty slots stay pending.
	settle := func(chunk *im.Chunk) {
		still := pending[:0]
		for _, i := range pending {
			slot := chunk.Slot(msgs[i].Seq)
			switch {
			case slot == nil || slot.Msg == nil:
				still = append(still, i)
			case im.SameMessage(slot.Msg, msgs[i]):
				outcomes[i] = AlreadyStored
			default:
				outcomes[i] = Taken
			}
		}
		pending = still
	}
	for attempt := 0; attempt < 3*maxWriteAttempts && len(pending) > 0; attempt++ {
		switch step {
		case stepInsert:
			inserted, err := s.insertChunk(ctx, docID, msgs, pending)
			if err != nil {
				return err
			}
			if inserted {
				stored()
			}
			step = stepUpdate // someone created the chunk first: update it instead
		case stepUpdate:
			res, err := s.setEmptySlots(ctx, docID, msgs, pending)
			if err != nil {
				return err
			}
			switch {
			case res.matched:
				stored()
			case res.read && res.chunk == nil:
				step = stepInsert
			case res.read:
				// The chunk read to test the slots tells what the read step would.
				settle(res.chunk)
			default:
				// No match: the chunk does not exist, or a target slot is no longer empty.
				step = stepRead
			}
		case stepRead:
			chunk, err := s.findChunk(ctx, docID)
			if err != nil {
				return err
			}
			if chunk == nil {
				step = stepInsert
				continue
			}
			settle(chunk)
			step = stepUpdate
		}
	}
	if len(pending) > 0 {
		return im.Errorf(im.ECONFLICT, "chunk %s kept changing under concurrent writes; retry", docID)
	}
	return nil
}

// chunkDoc is a chunk as inserted: keyed by its doc ID where chunks have natural keys, else
// with the ObjectID the driver makes up, as earlier versions inserted them.
type chunkDoc struct {
	ID       string `bson:"_id,omitempty"`
	im.Chunk `bson:",inline"`
}

// insertChunk inserts the chunk with all slots allocated and the pending messages in place. It
// reports false when the chunk already exists (duplicate key on doc_id).
func (s *Store) insertChunk(ctx context.Context, docID string, msgs []*im.Message, pending []int) (bool, error) {
	_, err := s.chunks.InsertOne(ctx, s.newChunkDoc(docID, msgs, pending))
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	if err != nil {
		return false, storeError("insert chunk", err)
	}
	return true, nil
}

// newChunkDoc is the chunk docID with all slots allocated and the pending messages in place.
func (s *Store) newChunkDoc(docID string, msgs []*im.Message, pending []int) chunkDoc {
	c := chunkDoc{Chunk: *im.NewChunk(docID)}
	if s.natural[CollectionChunks] {
		c.ID = docID
	}
	for _, i := range pending {
		c.Slots[im.SlotIndex(msgs[i].Seq)].Msg = msgs[i]
	}
	return c
}

// setEmptySlots writes the pending messages into their slots in one update that matches only
// while every one of those slots is empty.
func (s *Store) setEmptySlots(ctx context.Context, docID string, msgs []*im.Message, pending []int) (chunkUpdate, error) {
	seqs := make([]int64, len(pending))
	set := bson.D{}
	for j, i := range pending {
		seqs[j] = msgs[i].Seq
		set = append(set, bson.E{Key: slotPath(msgs[i].Seq), Value: im.Slot{Msg: msgs[i], DelList: []string{}}})
	}
	return s.updateChunk(ctx, "write slots", docID, slotsEmpty(seqs), bson.D{{Key: "$set", Value: set}})
}

func (s *Store) findChunk(ctx context.Context, docID string) (*im.Chunk, error) {
	var c im.Chunk
	err := s.chunks.FindOne(ctx, s.chunkFilter(docID, nil)).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError("read chunk", err)
	}
	return &c, nil
}
