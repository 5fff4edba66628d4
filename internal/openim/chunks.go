package openim

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// FindChunks reads whole chunks by doc ID, aligned with docIDs (Chunks with every seq of each
// chunk): what the read path reads, afresh every time, or behind msggate's cache when the feed
// reports OpenIM's changes.
func (s *Store) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	groups := make([]im.SeqGroup, len(docIDs))
	for i, id := range docIDs {
		groups[i] = im.SeqGroup{DocID: id}
	}
	return s.Chunks(ctx, groups)
}

// Chunks returns the chunks the groups name, aligned with groups: MongoDB's chunk documents
// (one $in query for all of them) with the messages OpenIM has accepted but not yet written to
// MongoDB filled in from its Redis message cache (one pipelined round trip for all of them).
// A group's Seqs say which seqs to look for in the cache; an empty Seqs means every seq of
// the chunk. Only seqs for which MongoDB has no message and no tombstone are looked up. The
// result is nil where neither store has anything. Every call reads both stores afresh and
// returns new chunks (groups naming the same doc ID share one), which the caller may keep.
//
// Errors: EINVALID for a malformed doc ID or a seq outside its group's chunk; EUNAVAILABLE when
// either store fails (never a chunk with the failed part silently left out).
func (s *Store) Chunks(ctx context.Context, groups []im.SeqGroup) ([]*im.Chunk, error) {
	type want struct {
		conversationID string
		index          int64
		all            bool
		seqs           map[int64]bool
	}
	wants := make(map[string]*want, len(groups))
	var docIDs []string
	for _, g := range groups {
		conv, index, err := im.ParseDocID(g.DocID)
		if err != nil {
			return nil, err
		}
		if err := validConversationID(conv); err != nil {
			return nil, err
		}
		w := wants[g.DocID]
		if w == nil {
			w = &want{conversationID: conv, index: index, seqs: map[int64]bool{}}
			wants[g.DocID] = w
			docIDs = append(docIDs, g.DocID)
		}
		if len(g.Seqs) == 0 {
			w.all = true
		}
		for _, seq := range g.Seqs {
			if err := im.ValidateSeq(seq); err != nil {
				return nil, err
			}
			if im.ChunkIndex(seq) != index {
				return nil, im.Errorf(im.EINVALID, "seq %d is not in chunk %s", seq, clip(g.DocID))
			}
			w.seqs[seq] = true
		}
	}

	chunks, err := s.readChunks(ctx, docIDs)
	if err != nil {
		return nil, err
	}

	// One HMGET per seq MongoDB has no message for, all in one pipeline.
	type probe struct {
		docID string
		seq   int64
		cmd   *redis.SliceCmd
	}
	var probes []probe
	pipe := s.rdb.Pipeline()
	for _, docID := range docIDs {
		w, c := wants[docID], chunks[docID]
		first := im.FirstSeq(w.index)
		for seq := first; seq < first+im.ChunkSize; seq++ {
			if !w.all && !w.seqs[seq] {
				continue
			}
			if c != nil && holdsMessage(c.Slot(seq)) {
				continue
			}
			probes = append(probes, probe{docID: docID, seq: seq,
				cmd: pipe.HMGet(ctx, msgCacheKey(w.conversationID, seq), rocksFields...)})
		}
	}
	if len(probes) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, redisError("read message cache", err)
		}
		for _, p := range probes {
			value, ok, err := rocksValue(p.cmd)
			if err != nil {
				return nil, redisError("read message cache", err)
			}
			if !ok {
				continue
			}
			slot, ok, err := decodeCachedSlot(value, p.seq)
			if err != nil {
				return nil, recordError(fmt.Sprintf("message cache value of %s seq %d", p.docID, p.seq), err)
			}
			if !ok {
				continue
			}
			c := chunks[p.docID]
			if c == nil {
				c = im.NewChunk(p.docID)
				chunks[p.docID] = c
			}
			*c.Slot(p.seq) = slot
		}
	}

	out := make([]*im.Chunk, len(groups))
	for i, g := range groups {
		out[i] = chunks[g.DocID]
	}
	return out, nil
}
