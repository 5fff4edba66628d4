package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// TimeDirection says which message SeqAtTime answers for a time.
type TimeDirection int

const (
	// AtOrAfter: the first readable message sent at or after the time.
	AtOrAfter TimeDirection = iota
	// AtOrBefore: the last readable message sent at or before the time.
	AtOrBefore
)

// SeqAtTime returns the seq of the message the viewer can read (shown OK or REVOKED, in their
// window: never below their min seq) that was sent at or after sendTime (ms), the first such,
// or at or before it, the last such, by direction; false when there is none.
//
// It is a binary search over the conversation's chunks by send time, reading one chunk per
// step through the reader's chunk source (so a chunk the source keeps costs no round trip) and
// each chunk at most once: about log2(chunks)+1 reads. A probe that finds no readable message
// in a chunk (all missing or deleted) reads the chunks below it, down to the search's lower
// bound, until one has; each such chunk is one read more.
//
// Send times are set by each sender's device and need not grow with seq (clock skew). What is
// guaranteed whatever the times: the answer's send time satisfies the direction, and the
// readable message next to it on the other side (the one before it for AtOrAfter, after it
// for AtOrBefore) does not, or does not exist; no answer (false) means the viewer's newest
// readable message was sent before sendTime (AtOrAfter) or their oldest after it
// (AtOrBefore). When send times do not decrease with seq, the answer is exactly the first
// (last) such message.
func (r Reader) SeqAtTime(ctx context.Context, conversationID string, sendTime int64, dir TimeDirection) (int64, bool, error) {
	st, err := r.States.LoadState(ctx, conversationID)
	if err != nil {
		return 0, false, err
	}
	lo, hi := st.VisibleMin(), st.MaxSeq
	if hi < lo {
		return 0, false, nil
	}
	ts := timeSearch{r: r, conversationID: conversationID, version: st.ChunksVersion, lo: lo, hi: hi,
		chunks: &readOnce{src: r.Chunks}}
	// beyond tells whether a chunk's readable messages lie wholly on the far side of sendTime
	// from the answer's nearer neighbour: for AtOrAfter, its newest was sent at or after it;
	// for AtOrBefore, its oldest after it. Over chunks in seq order it turns from false to
	// true once when times do not decrease.
	beyond := func(ms []timed) bool { return ms[len(ms)-1].sendTime >= sendTime }
	if dir == AtOrBefore {
		beyond = func(ms []timed) bool { return ms[0].sendTime > sendTime }
	}
	// The first chunk that is beyond lies in [l, h]; h past the last chunk: none is.
	// first is h's messages, below those of the nearest readable chunk under l.
	l, h := im.ChunkIndex(lo), im.ChunkIndex(hi)+1
	var first, below []timed
	for l < h {
		mid := l + (h-l)/2
		c := mid
		ms, err := ts.readable(ctx, c)
		for err == nil && len(ms) == 0 && c > l {
			c--
			ms, err = ts.readable(ctx, c)
		}
		switch {
		case err != nil:
			return 0, false, err
		case len(ms) == 0: // nothing readable in l..mid
			l = mid + 1
		case beyond(ms):
			h, first = c, ms
		default: // nothing readable between c and mid
			l, below = mid+1, ms
		}
	}
	if dir == AtOrAfter {
		for _, m := range first {
			if m.sendTime >= sendTime {
				return m.seq, true, nil
			}
		}
		return 0, false, nil
	}
	for i := len(below) - 1; i >= 0; i-- {
		if below[i].sendTime <= sendTime {
			return below[i].seq, true, nil
		}
	}
	return 0, false, nil
}

// timed is a readable seq and its message's send time.
type timed struct{ seq, sendTime int64 }

type timeSearch struct {
	r              Reader
	conversationID string
	version        string
	lo, hi         int64 // the viewer's window
	chunks         *readOnce
}

// readable returns the seqs of chunk index c in the viewer's window that they can read, in
// ascending order, with their send times.
func (ts timeSearch) readable(ctx context.Context, c int64) ([]timed, error) {
	found, err := ts.chunks.LoadChunks(ctx, []ChunkRef{{DocID: im.ChunkDocID(ts.conversationID, c), Version: ts.version}})
	if err != nil {
		return nil, err
	}
	if len(found) != 1 {
		return nil, im.Errorf(im.EINTERNAL, "chunk source answered %d of 1 chunks", len(found))
	}
	chunk := found[0]
	if chunk == nil {
		return nil, nil
	}
	var out []timed
	for s := max(im.FirstSeq(c), ts.lo); s <= min(im.FirstSeq(c)+im.ChunkSize-1, ts.hi); s++ {
		slot := chunk.Slot(s)
		if slot == nil || slot.Msg == nil {
			continue
		}
		if readable(im.ViewSlot(ts.conversationID, s, slot, ts.r.Viewer).Status) {
			out = append(out, timed{seq: s, sendTime: slot.Msg.SendTime})
		}
	}
	return out, nil
}
