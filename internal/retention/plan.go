package retention

import (
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// window is a run of a conversation's chunks as read: chunks[i] has index from+i, nil when
// the document does not exist.
type window struct {
	from   int64
	chunks []*im.Chunk
}

// to is the index of the window's last chunk.
func (w window) to() int64 { return w.from + int64(len(w.chunks)) - 1 }

// chunk returns the chunk holding seq; nil when it does not exist or lies outside the window.
func (w window) chunk(seq int64) *im.Chunk {
	i := im.ChunkIndex(seq) - w.from
	if i < 0 || i >= int64(len(w.chunks)) {
		return nil
	}
	return w.chunks[i]
}

// lastSeq is the highest seq the chunk with the given index holds.
func lastSeq(chunkIndex int64) int64 { return im.FirstSeq(chunkIndex+1) - 1 }

// plan is what one run does to one conversation.
type plan struct {
	// minSeq is the new min seq, or 0 when it stays.
	minSeq int64
	// below are chunks that lie wholly under the current min seq (unreadable already), every
	// message old: deleted before the min seq moves, so that a run stopped half-way never
	// leaves them further below the min seq than the next run looks.
	below []string
	// drop are the other chunks whose every seq is at or below the new min seq - 1, every
	// message old: deleted after the min seq moved.
	drop []string
	// boundarySeq, when > 0, is the last hidden seq of a chunk whose slots above it are empty:
	// that chunk is deleted only while they stay empty (chunkstore.DeleteChunkIfEmptyAbove).
	boundarySeq int64
	// finished is true when the scan reached a message newer than the cutoff or the max seq:
	// nothing older remains beyond the window.
	finished bool
}

// planConversation decides what to delete in a conversation, given its seq document, the
// chunks read, and the cutoff (ms; a message is old when its send time is before it). See the
// package comment for the rule; this is its one implementation.
func planConversation(d chunkstore.ConversationSeqs, w window, cutoff int64) plan {
	var p plan
	curMin := max(d.MinSeq, 1)
	// safe is T of the package comment: every stored message in curMin..safe is old, and safe
	// holds one (or safe is curMin-1: nothing readable is old).
	safe := curMin - 1
	end := min(d.MaxSeq, lastSeq(w.to()))
	for seq := curMin; seq <= end; seq++ {
		slot := w.chunk(seq).Slot(seq)
		if slot == nil || slot.Msg == nil {
			continue
		}
		if slot.Msg.SendTime >= cutoff {
			p.finished = true
			break
		}
		safe = seq
	}
	if end >= d.MaxSeq {
		p.finished = true
	}
	if safe >= curMin {
		p.minSeq = safe + 1
	}
	for i, c := range w.chunks {
		if c == nil || !allOld(c, cutoff) {
			continue
		}
		idx := w.from + int64(i)
		switch {
		case lastSeq(idx) < curMin:
			p.below = append(p.below, c.DocID)
		case lastSeq(idx) <= safe:
			p.drop = append(p.drop, c.DocID)
		case im.FirstSeq(idx) <= safe && emptyAbove(c, safe):
			p.boundarySeq = safe
		}
	}
	return p
}

// allOld reports whether every message stored in the chunk, readable or not (tombstones and
// revoked messages keep their send time), was sent before cutoff.
func allOld(c *im.Chunk, cutoff int64) bool {
	for _, s := range c.Slots {
		if s.Msg != nil && s.Msg.SendTime >= cutoff {
			return false
		}
	}
	return true
}

// emptyAbove reports whether the chunk holding seq stores nothing above seq.
func emptyAbove(c *im.Chunk, seq int64) bool {
	for i := im.SlotIndex(seq) + 1; i < len(c.Slots); i++ {
		if c.Slots[i].Msg != nil {
			return false
		}
	}
	return true
}
