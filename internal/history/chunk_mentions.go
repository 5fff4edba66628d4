package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// ChunkMentions counts and lists a user's unread mentions by reading the chunks of their
// unread range: the answer for a store that keeps no mention index of msggate's (an OpenIM
// deployment, whose chunks carry each message's at_user_id_list, revoke and del_list). It is
// exact by construction, whatever happened to any cache, and its price follows the unread
// seqs: one chunk per im.ChunkSize of them (a conversation with nothing unread costs none),
// all of one call's conversations in one LoadChunks, through Chunks' copies where it keeps
// them.
type ChunkMentions struct {
	Chunks ChunkSource
}

// mentionRange is one conversation's unread range and the chunks covering it.
type mentionRange struct {
	st          im.SeqState
	after, upTo int64
	first, n    int // refs[first : first+n]
}

func (c ChunkMentions) read(ctx context.Context, states []im.SeqState) ([]mentionRange, []*im.Chunk, error) {
	rs := make([]mentionRange, len(states))
	var refs []ChunkRef
	for i, st := range states {
		after, upTo := st.UnreadRange()
		rs[i] = mentionRange{st: st, after: after, upTo: upTo, first: len(refs)}
		if upTo <= after {
			continue
		}
		for ci := im.ChunkIndex(after + 1); ci <= im.ChunkIndex(upTo); ci++ {
			refs = append(refs, ChunkRef{DocID: im.DocID(st.ConversationID, ci*im.ChunkSize+1), Version: st.ChunksVersion})
		}
		rs[i].n = len(refs) - rs[i].first
	}
	if len(refs) == 0 {
		return rs, nil, nil
	}
	chunks, err := c.Chunks.LoadChunks(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	return rs, chunks, nil
}

// each calls yield with each seq of r that mentions userID, in order, until it returns false.
func (r mentionRange) each(chunks []*im.Chunk, userID string, yield func(seq int64) bool) {
	for k := range r.n {
		chunk := chunks[r.first+k]
		if chunk == nil {
			continue
		}
		base := (im.ChunkIndex(r.after+1)+int64(k))*im.ChunkSize + 1
		for i := range int64(im.ChunkSize) {
			seq := base + i
			if seq <= r.after || seq > r.upTo {
				continue
			}
			m, ok := im.MentionOfSlot(chunk.Slot(seq))
			if ok && m.Mentions(userID) && !yield(seq) {
				return
			}
		}
	}
}

// UnreadMentionCounts returns userID's unread mentions in each conversation, aligned with
// states.
func (c ChunkMentions) UnreadMentionCounts(ctx context.Context, userID string, states []im.SeqState) ([]int64, error) {
	rs, chunks, err := c.read(ctx, states)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(states))
	for i, r := range rs {
		r.each(chunks, userID, func(int64) bool { out[i]++; return true })
	}
	return out, nil
}

// UnreadMentionSeqs returns the seqs of userID's first limit unread mentions in st's
// conversation, oldest first.
func (c ChunkMentions) UnreadMentionSeqs(ctx context.Context, userID string, st im.SeqState, limit int) ([]int64, error) {
	rs, chunks, err := c.read(ctx, []im.SeqState{st})
	if err != nil {
		return nil, err
	}
	var out []int64
	rs[0].each(chunks, userID, func(seq int64) bool {
		out = append(out, seq)
		return len(out) < limit
	})
	return out, nil
}
