package openim

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// What msggate reindex reads of an OpenIM deployment (search/reindex.Store): its chat
// conversations in order, and their chunks by index. Notification conversations (n_, sn_)
// hold OpenIM's tips, not what users write, and are left out, as the feed's indexer leaves
// them out.

// ListConversationSeqs returns up to limit chat conversations (single chats and groups) after
// the conversation ID after, in ID order, from OpenIM's seq collection: each with its min seq
// (seq.min_seq, OpenIM's clear-for-everyone floor) and its max seq as MaxSeqs reads it (the
// current allocation, not the reserved block's end).
func (s *Store) ListConversationSeqs(ctx context.Context, after string, limit int) ([]chunkstore.ConversationSeqs, error) {
	var out []chunkstore.ConversationSeqs
	var ids []string
	for len(out) < limit {
		// The index on conversation_id is not unique: a page can repeat an ID, so pages are
		// read until limit distinct chat conversations are found or the collection ends.
		docs, err := findAllOpts[seqDoc](ctx, s.seq, "list seq", bson.D{{Key: "conversation_id", Value: bson.D{{Key: "$gt", Value: after}}}},
			options.Find().SetSort(bson.D{{Key: "conversation_id", Value: 1}}).SetLimit(int64(limit)).
				SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "conversation_id", Value: 1}, {Key: "min_seq", Value: 1}}))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if d.ConversationID == after || len(out) == limit {
				continue
			}
			after = d.ConversationID
			c, err := im.ParseOpenIMConversationID(d.ConversationID)
			if err != nil || c.Kind != im.SingleChat && c.Kind != im.GroupChat {
				continue
			}
			out = append(out, chunkstore.ConversationSeqs{ConversationID: d.ConversationID, MinSeq: d.MinSeq})
			ids = append(ids, d.ConversationID)
		}
		if len(docs) < limit {
			break
		}
	}
	heads, err := s.MaxSeqs(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].MaxSeq = heads[i].MaxSeq
		out[i].LastTime = heads[i].LastTime
	}
	return out, nil
}

// FindChunkRange reads a conversation's chunks with indexes from..to (inclusive), aligned with
// the indexes (nil where neither store holds anything), with the messages only OpenIM's
// message cache holds filled in (Chunks).
func (s *Store) FindChunkRange(ctx context.Context, conversationID string, from, to int64) ([]*im.Chunk, error) {
	if from < 0 || to < from {
		return nil, nil
	}
	ids := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		ids = append(ids, im.ChunkDocID(conversationID, i))
	}
	return s.FindChunks(ctx, ids)
}
