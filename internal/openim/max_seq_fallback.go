package openim

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// When OpenIM's Redis has no MALLOC_SEQ key for a conversation (flushed, evicted, or expired
// after 365 idle days), the only max seq MongoDB keeps is seq.max_seq, the end of the last
// block of seqs OpenIM reserved: Malloc (database/mgo/seq_conversation.go) adds the block size
// to it, and getMallocSize (cache/redis/seq_conversation.go) makes a block 100+n seqs for a
// group and 50+n for any other conversation, n being the messages that triggered the refill,
// which take the block's first n seqs at once. A refill only happens for a send, so the highest
// seq OpenIM handed out lies at most 100 below seq.max_seq: in the chunk that holds
// seq.max_seq or the one below it. Reporting seq.max_seq itself would count the unused rest of
// the block as unread messages that never arrive (the defect issue 9 describes), so the max
// seq is the highest slot in those chunks that holds a message or a delete-for-everyone
// tombstone. One chunk further down is read as a margin for messages that never reached
// MongoDB; if none of the three holds anything, the conversation reads as having no messages.
//
// This is where msggate departs from OpenIM on purpose: OpenIM, on its next read or send,
// reseeds CURR from seq.max_seq, and from then on msggate reads CURR like everyone else, so
// the numbers agree again (with the same hole OpenIM then has).
const fallbackChunks = 3

type head struct {
	seq  int64 // highest seq that holds or held a message
	time int64 // send time of the newest message found (ms), the activity time
}

// maxSeqFallback finds the head of each conversation from its chunks, in one $in query for all
// of them.
func (s *Store) maxSeqFallback(ctx context.Context, conversationIDs []string, seqDocs map[string]seqDoc) (map[string]head, error) {
	out := make(map[string]head, len(conversationIDs))
	if len(conversationIDs) == 0 {
		return out, nil
	}
	var docIDs []string
	for _, c := range conversationIDs {
		top := im.ChunkIndex(seqDocs[c].MaxSeq)
		for i := top; i > top-fallbackChunks && i >= 0; i-- {
			docIDs = append(docIDs, im.ChunkDocID(c, i))
		}
	}
	chunks, err := s.readChunks(ctx, docIDs)
	if err != nil {
		return nil, err
	}
	for _, c := range conversationIDs {
		var h head
		for seq := seqDocs[c].MaxSeq; seq >= 1 && im.ChunkIndex(seq) > im.ChunkIndex(seqDocs[c].MaxSeq)-fallbackChunks; seq-- {
			slot := chunks[im.DocID(c, seq)].Slot(seq)
			if !holdsMessage(slot) {
				continue
			}
			if h.seq == 0 {
				h.seq = seq
			}
			if slot.Msg.SendTime > 0 {
				h.time = slot.Msg.SendTime
				break
			}
		}
		out[c] = h
	}
	return out, nil
}
