// Package reindex builds a search index from the store's chunks: every conversation, every
// stored seq from the conversation's min seq to its max seq, indexed as the slot shows it now
// (ingest.SlotChange: the message, hidden for those who deleted it for themselves, or removed
// when revoked or deleted for everyone). Applying a change twice is applying it once, so a run
// can be repeated, and one that stopped resumes after the last conversation it finished (its
// Checkpoint).
package reindex

import (
	"context"
	"time"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/search"
)

// Store is what a reindex reads: msggate's own *chunkstore.Store is one.
type Store interface {
	ListConversationSeqs(ctx context.Context, after string, limit int) ([]chunkstore.ConversationSeqs, error)
	FindChunkRange(ctx context.Context, conversationID string, from, to int64) ([]*im.Chunk, error)
}

// Options configures a Job. The zero value is usable but reports nothing.
type Options struct {
	// After resumes a run after this conversation ID (a Checkpoint); "" starts at the start.
	After string
	// Batch is how many changes go to the index at once. Default 2000.
	Batch int
	// Progress is called after each conversation's changes are in the index, with the run so
	// far; the caller may save Summary.Checkpoint to resume from.
	Progress func(Summary)
}

// Summary is what a run did, counting the conversations through Checkpoint only: those whose
// changes are all in the index.
type Summary struct {
	Conversations int64 // conversations finished
	Messages      int64 // messages indexed (Put)
	Removed       int64 // seqs removed from the index: revoked, deleted for everyone, or empty
	// Seqs is how many seqs of those conversations were read (messages, removed or not).
	Seqs int64
	// Checkpoint is the last conversation whose changes are all in the index.
	Checkpoint string
	Elapsed    time.Duration
}

// Plan is the size of a run, for a progress bar: conversations and readable seqs after After.
type Plan struct {
	Conversations int64
	Seqs          int64
}

// Measure counts what a run from after will read: one pass over the seq documents, no chunk.
func Measure(ctx context.Context, st Store, after string) (Plan, error) {
	var p Plan
	err := eachPage(ctx, st, after, func(cs chunkstore.ConversationSeqs) error {
		p.Conversations++
		lo, hi := bounds(cs)
		if hi >= lo {
			p.Seqs += hi - lo + 1
		}
		return nil
	})
	return p, err
}

func eachPage(ctx context.Context, st Store, after string, f func(chunkstore.ConversationSeqs) error) error {
	for {
		page, err := st.ListConversationSeqs(ctx, after, chunkstore.MaxConversationPage)
		if err != nil {
			return err
		}
		for _, cs := range page {
			if err := f(cs); err != nil {
				return err
			}
		}
		if len(page) < chunkstore.MaxConversationPage {
			return nil
		}
		after = page[len(page)-1].ConversationID
	}
}

// bounds are the seqs of a conversation a reindex reads: from its min seq to its max seq.
func bounds(cs chunkstore.ConversationSeqs) (lo, hi int64) {
	return max(cs.MinSeq, 1), cs.MaxSeq
}

// Run indexes every conversation after opts.After into engine. Each batch is settled
// (search.Settle): read again once it is in the index, and what a revoke or delete changed
// meanwhile written again, so a run racing the gateway's own changes leaves none undone.
func Run(ctx context.Context, st Store, engine search.Engine, opts Options) (Summary, error) {
	if opts.Batch <= 0 {
		opts.Batch = 2000
	}
	start := time.Now()
	// sum counts what was read; done, what is in the index through its Checkpoint. A run that
	// stops reports done: what it read after the checkpoint, a resumed run reads again, and
	// the two runs' summaries add up to the store's.
	sum := Summary{Checkpoint: opts.After}
	done := sum
	var pending []search.Change
	var finished []Summary // sum as each conversation whose changes are all in pending or the index ended
	reread := func(ctx context.Context, keys []search.Key) ([]search.Change, error) { return readSlots(ctx, st, keys) }
	flush := func() error {
		if len(pending) > 0 {
			if err := search.Settle(ctx, engine, pending, reread); err != nil {
				return err
			}
			pending = pending[:0]
		}
		if n := len(finished); n > 0 {
			done = finished[n-1]
			finished = finished[:0]
			done.Elapsed = time.Since(start)
			if opts.Progress != nil {
				opts.Progress(done)
			}
		}
		return nil
	}
	err := eachPage(ctx, st, opts.After, func(cs chunkstore.ConversationSeqs) error {
		lo, hi := bounds(cs)
		for from := im.ChunkIndex(lo); hi >= lo && from <= im.ChunkIndex(hi); from += chunkstore.MaxChunkRange {
			to := min(from+chunkstore.MaxChunkRange-1, im.ChunkIndex(hi))
			chunks, err := st.FindChunkRange(ctx, cs.ConversationID, from, to)
			if err != nil {
				return err
			}
			for i, c := range chunks {
				first := (from+int64(i))*im.ChunkSize + 1
				for seq := max(first, lo); seq < first+im.ChunkSize && seq <= hi; seq++ {
					ch := ingest.SlotChange(cs.ConversationID, seq, c.Slot(seq))
					if ch.Put != nil {
						sum.Messages++
					} else {
						sum.Removed++
					}
					sum.Seqs++
					pending = append(pending, ch)
				}
			}
			if len(pending) >= opts.Batch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		sum.Conversations++
		sum.Checkpoint = cs.ConversationID
		finished = append(finished, sum)
		if len(pending) >= opts.Batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	done.Elapsed = time.Since(start)
	return done, err
}

// readSlots reads keys' slots as they are now and returns their changes, in keys' order. A
// batch's keys of one conversation are mostly consecutive seqs; each run of consecutive chunk
// indexes is one read.
func readSlots(ctx context.Context, st Store, keys []search.Key) ([]search.Change, error) {
	out := make([]search.Change, len(keys))
	for i := 0; i < len(keys); {
		conv, from := keys[i].ConversationID, im.ChunkIndex(keys[i].Seq)
		to, j := from, i
		for ; j < len(keys) && keys[j].ConversationID == conv; j++ {
			c := im.ChunkIndex(keys[j].Seq)
			if c < to || c > to+1 || c-from >= chunkstore.MaxChunkRange {
				break
			}
			to = c
		}
		chunks, err := st.FindChunkRange(ctx, conv, from, to)
		if err != nil {
			return nil, err
		}
		for ; i < j; i++ {
			var c *im.Chunk
			if n := im.ChunkIndex(keys[i].Seq) - from; n < int64(len(chunks)) {
				c = chunks[n]
			}
			out[i] = ingest.SlotChange(conv, keys[i].Seq, c.Slot(keys[i].Seq))
		}
	}
	return out, nil
}
