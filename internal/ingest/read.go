package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// maxReadFlags bounds how many of the newly read seqs get their single-chat is_read flag set
// in one call: the newest ones, which are what a client shows. Read seqs and unread counts are
// exact regardless; only the per-message flag of older messages is left unset.
const maxReadFlags = 1000

// MarkRead moves userID's read seq (see imsync.Ledger.MarkRead) and, in a single chat, sets
// is_read on the newly read messages the peer sent, so the peer sees them as read. chunks is
// where the messages are read from (a cached copy will do: setting the flag twice is harmless).
func (in *Ingester) MarkRead(ctx context.Context, chunks history.ChunkSource, userID string, conv im.Conversation, readSeq *int64) (im.SeqState, error) {
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
	slots, err := history.Slots(ctx, chunks, conv.ID, seqs)
	if err != nil {
		return after, err
	}
	peer := conv.Peer(userID)
	var unread []int64
	for i, slot := range slots {
		if slot != nil && slot.Msg != nil && slot.Msg.SendID == peer && !slot.IsRead {
			unread = append(unread, seqs[i])
		}
	}
	if len(unread) == 0 {
		return after, nil
	}
	if err := in.store.MarkRead(ctx, conv.ID, unread); err != nil {
		return after, err
	}
	return after, in.cache.InvalidateChunks(ctx, docIDsOf(conv.ID, seqs))
}

// docIDsOf names the chunks that hold seqs, each once.
func docIDsOf(conversationID string, seqs []int64) []string {
	var out []string
	for _, g := range im.GroupSeqsByDocID(conversationID, seqs) {
		out = append(out, g.DocID)
	}
	return out
}
