package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
)

// OpenIMChunks is the chunk source of OpenIM mode: every load reads OpenIM's MongoDB and its
// Redis message cache afresh (openim.Store.Chunks), with nothing cached by msggate, so a
// message OpenIM appends, revokes or deletes shows on the very next request. OpenIM's Redis is
// already the cache in front of its MongoDB; a second one here would need OpenIM to tell it
// of every change, which it cannot. The cost: each load is one MongoDB $in query and one Redis
// pipeline (the cache entries of the seqs MongoDB holds no message for); the request's
// dataloader makes that one load per query depth.
func OpenIMChunks(s *openim.Store) ChunkSource {
	// Whole chunks: a page reads most of a chunk anyway, and the loader shares one chunk among
	// every resolver that asks for any of its seqs.
	return ChunkFunc(OpenIMChunkFinder{Store: s}.FindChunks)
}

// OpenIMChunkFinder reads whole chunks of an OpenIM deployment (openim.Store.Chunks: MongoDB,
// and OpenIM's message cache for what MongoDB lacks yet), for CachedChunks in OpenIM mode.
type OpenIMChunkFinder struct{ Store *openim.Store }

// FindChunks reads the chunks named by docIDs, aligned with them.
func (f OpenIMChunkFinder) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	groups := make([]im.SeqGroup, len(docIDs))
	for i, id := range docIDs {
		groups[i] = im.SeqGroup{DocID: id}
	}
	return f.Store.Chunks(ctx, groups)
}

// OpenIMQuotes is OpenIM's quote rewrite as an AdjustFunc (see openim.ViewQuote): a quote
// whose quoted message has since been revoked shows the revoke notice instead of the quoted
// text, as OpenIM's own reads show it. The quoted messages of all the views are read in one
// chunk load per conversation. The quoted message is read as stored, whoever the viewer is,
// as OpenIM reads it.
func OpenIMQuotes(ctx context.Context, chunks ChunkSource, _ string, views []im.MessageView) error {
	type lookup struct {
		at  []int
		seq []int64
	}
	var order []string
	byConv := map[string]*lookup{}
	for i, v := range views {
		if v.Status != im.StatusOK || v.Message == nil {
			continue
		}
		seq, ok := openim.QuotedSeq(v.Message)
		if !ok {
			// A quote ViewQuote can decide without reading (or no quote at all).
			views[i].Message = openim.ViewQuote(v.Message, nil)
			continue
		}
		if im.ValidateSeq(seq) != nil {
			// No such seq can hold a message: as OpenIM finds no message there.
			views[i].Message = openim.ViewQuote(v.Message, nil)
			continue
		}
		l := byConv[v.ConversationID]
		if l == nil {
			l = &lookup{}
			byConv[v.ConversationID] = l
			order = append(order, v.ConversationID)
		}
		l.at = append(l.at, i)
		l.seq = append(l.seq, seq)
	}
	for _, conv := range order {
		l := byConv[conv]
		slots, err := Slots(ctx, chunks, conv, l.seq)
		if err != nil {
			return err
		}
		for j, i := range l.at {
			views[i].Message = openim.ViewQuote(views[i].Message, slots[j])
		}
	}
	return nil
}
