package chunkstore

import (
	"context"
	"sort"

	"github.com/msggate/msggate/internal/im"
)

// chunkInsertBatch bounds the chunks one insert command carries: a chunk is a hundred slots,
// and FerretDB writes an insert command in one SQLite transaction, which every other write
// to the database waits for.
const chunkInsertBatch = 50

// ConversationMessages is one conversation's share of a bulk write: messages with distinct,
// valid seqs.
type ConversationMessages struct {
	ConversationID string
	Messages       []*im.Message
}

// WriteMessagesBulk is WriteMessages for many conversations at once, as a bulk import writes
// them: every chunk that the messages start (their lowest seq is its first slot, so it most
// likely does not exist) is inserted whole, all such chunks of all the conversations together
// in insert commands of writeBatch chunks; the other chunks, and those found to exist, are
// written one by one as WriteMessages writes them. The number of commands thus follows the
// chunks that exist already, not the conversations. The outcomes are aligned with each
// conversation's messages.
func (s *Store) WriteMessagesBulk(ctx context.Context, convs []ConversationMessages) ([][]SlotOutcome, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	type chunkWrite struct {
		conv    int
		docID   string
		pending []int
	}
	outcomes := make([][]SlotOutcome, len(convs))
	var fresh, rest []chunkWrite
	for ci, cm := range convs {
		outcomes[ci] = make([]SlotOutcome, len(cm.Messages))
		seqs := make([]int64, len(cm.Messages))
		bySeq := make(map[int64]int, len(cm.Messages))
		for i, m := range cm.Messages {
			if err := im.ValidateSeq(m.Seq); err != nil {
				return nil, err
			}
			if _, dup := bySeq[m.Seq]; dup {
				return nil, im.Errorf(im.EINTERNAL, "seq %d appears twice in one write", m.Seq)
			}
			bySeq[m.Seq] = i
			seqs[i] = m.Seq
		}
		for _, g := range im.GroupSeqsByDocID(cm.ConversationID, seqs) {
			w := chunkWrite{conv: ci, docID: g.DocID}
			for _, seq := range g.Seqs {
				w.pending = append(w.pending, bySeq[seq])
			}
			msgs := cm.Messages
			sort.Slice(w.pending, func(a, b int) bool { return msgs[w.pending[a]].Seq < msgs[w.pending[b]].Seq })
			if im.SlotIndex(msgs[w.pending[0]].Seq) == 0 {
				fresh = append(fresh, w)
			} else {
				rest = append(rest, w)
			}
		}
	}
	docs := make([]any, len(fresh))
	for i, w := range fresh {
		docs[i] = s.newChunkDoc(w.docID, convs[w.conv].Messages, w.pending)
	}
	dups, err := insertNewOf(ctx, s.chunks, "insert chunks", docs, chunkInsertBatch)
	if err != nil {
		return outcomes, err
	}
	exists := make(map[int]bool, len(dups))
	for _, i := range dups {
		exists[i] = true
	}
	for i, w := range fresh {
		if exists[i] {
			rest = append(rest, w) // someone created the chunk first: write its slots
			continue
		}
		for _, p := range w.pending {
			outcomes[w.conv][p] = Stored
		}
	}
	for _, w := range rest {
		if err := s.writeChunk(ctx, w.docID, convs[w.conv].Messages, w.pending, outcomes[w.conv], false); err != nil {
			return outcomes, err
		}
	}
	return outcomes, nil
}
