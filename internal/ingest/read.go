package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// maxReadFlags bounds how many of the newly read seqs get their single-chat is_read flag set
// in one call: the newest ones, which are what a client shows. Read seqs and unread counts are
// exact regardless; only the per-message flag of older messages is left unset.
const maxReadFlags = 1000

// ChunkLoader reads chunks, aligned with docIDs (history.Reader.LoadChunks).
type ChunkLoader func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

// MarkRead moves userID's read seq (see imsync.Ledger.MarkRead) and, in a single chat, sets
// is_read on the newly read messages the peer sent, so the peer sees them as read.
func (in *Ingester) MarkRead(ctx context.Context, load ChunkLoader, userID string, conv im.Conversation, readSeq *int64) (im.SeqState, error) {
	after, prev, err := in.ledger.MarkRead(ctx, userID, conv.ID, readSeq)
	if err != nil || conv.Kind != im.SingleChat || after.ReadSeq <= prev {
		return after, err
	}
	from := prev + 1
	if after.ReadSeq-from+1 > maxReadFlags {
		from = after.ReadSeq - maxReadFlags + 1
	}
	var seqs []int64
	for s := from; s <= after.ReadSeq; s++ {
		seqs = append(seqs, s)
	}
	groups := im.GroupSeqsByDocID(conv.ID, seqs)
	docIDs := make([]string, len(groups))
	for i, g := range groups {
		docIDs[i] = g.DocID
	}
	chunks, err := load(ctx, docIDs)
	if err != nil {
		return after, err
	}
	peer := conv.Peer(userID)
	var unread []int64
	for i, g := range groups {
		for _, s := range g.Seqs {
			if slot := chunks[i].Slot(s); slot != nil && slot.Msg != nil && slot.Msg.SendID == peer && !slot.IsRead {
				unread = append(unread, s)
			}
		}
	}
	if len(unread) == 0 {
		return after, nil
	}
	if err := in.store.MarkRead(ctx, conv.ID, unread); err != nil {
		return after, err
	}
	return after, in.cache.InvalidateChunks(ctx, docIDs)
}
