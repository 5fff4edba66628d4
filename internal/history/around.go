package history

import (
	"context"
	"slices"

	"github.com/msggate/msggate/internal/im"
)

// Pages around a message: a client that jumps to a seq (a search hit, a push) or to a quoted
// message (which carries its client message ID) shows that message with its neighbours, then
// pages on from either end with BeforeSeq and AfterSeq.

// ClientMsgIndex finds messages of a conversation by the client message ID their senders gave
// them. A store that keeps no such index leaves Reader.ClientMsgs nil.
type ClientMsgIndex interface {
	// FindClientMsgIDSeqs returns seqs that were given to a message with clientMsgID in the
	// conversation, by any sender (two senders may pick the same ID), newest first, at most a
	// bounded number of them (im.MaxClientMsgIDSeqs). A seq it returns is a claim: the message
	// there is checked before it is believed.
	FindClientMsgIDSeqs(ctx context.Context, conversationID, clientMsgID string) ([]int64, error)
}

// aroundBounds places a page of limit seqs around at in the window [lo, hi] (lo <= at <= hi):
// at with (limit-1)/2 seqs after it and the rest before it; where one side reaches the edge of
// the window, the other side takes the seqs it could not.
func aroundBounds(lo, hi, at int64, limit int) (from, to int64) {
	n := int64(limit)
	newer := (n - 1) / 2
	from, to = at-(n-1-newer), at+newer
	if from < lo {
		to, from = to+(lo-from), lo
	}
	if to > hi {
		from, to = from-(to-hi), hi
	}
	return max(from, lo), to
}

// aroundPage answers a PageQuery with AroundSeq or AroundClientMsgID (Page has checked that
// exactly one is set and no bound is).
func (r Reader) aroundPage(ctx context.Context, conversationID string, q PageQuery, limit int) (Page, error) {
	if q.AroundSeq != nil {
		if err := im.ValidateSeq(*q.AroundSeq); err != nil {
			return Page{}, err
		}
	} else if id := *q.AroundClientMsgID; id == "" || len(id) > im.MaxClientMsgIDLength {
		// No message can have such an ID: a send refuses it.
		return Page{}, im.Errorf(im.EINVALID, "aroundClientMsgID must be 1 to %d bytes", im.MaxClientMsgIDLength)
	}
	st, err := r.States.LoadState(ctx, conversationID)
	if err != nil {
		return Page{}, err
	}
	// The chunks read to find the message are those of its page: read each once.
	once := &readOnce{src: r.Chunks}
	r.Chunks = once
	var at int64
	if q.AroundSeq != nil {
		at = *q.AroundSeq
	} else if at, err = r.seqOfClientMsgID(ctx, conversationID, st, *q.AroundClientMsgID); err != nil {
		return Page{}, err
	}
	lo := st.VisibleMin()
	if at < lo {
		return Page{}, im.HistoryUnavailable(conversationID, lo)
	}
	if at > st.MaxSeq {
		return Page{}, im.Errorf(im.ENOTFOUND, "seq %d of %s holds no message yet: the max seq is %d",
			at, conversationID, st.MaxSeq)
	}
	from, to := aroundBounds(lo, st.MaxSeq, at, limit)
	seqs := make([]int64, 0, to-from+1)
	for s := from; s <= to; s++ {
		seqs = append(seqs, s)
	}
	views, err := r.views(ctx, conversationID, st.ChunksVersion, seqs)
	if err != nil {
		return Page{}, err
	}
	return Page{Messages: views, HasMoreBefore: from > lo, HasMoreAfter: to < st.MaxSeq}, nil
}

// seqOfClientMsgID returns the seq of the newest message in the viewer's window that has
// clientMsgID and that the viewer can read (shown OK or REVOKED: not deleted for everyone or
// for them). The index's claims are checked against the messages in their slots, so a claim
// that points elsewhere is never taken. None: ENOTFOUND; only claims below the viewer's min
// seq: im.HistoryUnavailable, as a seq there would answer.
func (r Reader) seqOfClientMsgID(ctx context.Context, conversationID string, st im.SeqState, clientMsgID string) (int64, error) {
	if r.ClientMsgs == nil {
		return 0, im.Errorf(im.EUNSUPPORTED,
			"this gateway's store keeps no index of client message IDs: page by aroundSeq instead")
	}
	claims, err := r.ClientMsgs.FindClientMsgIDSeqs(ctx, conversationID, clientMsgID)
	if err != nil {
		return 0, err
	}
	lo := st.VisibleMin()
	gone := false
	var seqs []int64
	for _, s := range claims[:min(len(claims), im.MaxClientMsgIDSeqs)] {
		switch {
		case im.ValidateSeq(s) != nil || s > st.MaxSeq:
		case s < lo:
			gone = true
		default:
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	slots, err := slotsAt(ctx, r.Chunks, conversationID, st.ChunksVersion, seqs)
	if err != nil {
		return 0, err
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		slot := slots[i]
		if slot == nil || slot.Msg == nil || slot.Msg.ClientMsgID != clientMsgID {
			continue
		}
		if readable(im.ViewSlot(conversationID, seqs[i], slot, r.Viewer).Status) {
			return seqs[i], nil
		}
	}
	if gone {
		return 0, im.HistoryUnavailable(conversationID, lo)
	}
	return 0, im.Errorf(im.ENOTFOUND, "no message of %s that you can read has client message ID %q",
		conversationID, clientMsgID)
}

// readable tells whether a seq shown with status is a message the viewer may jump to: one
// shown whole, or revoked (its place and time stay).
func readable(status im.MessageStatus) bool {
	return status == im.StatusOK || status == im.StatusRevoked
}

// readOnce is a ChunkSource that reads each chunk from src once per read of the path (one
// request's page, one time search) and answers later asks for it from what it read.
type readOnce struct {
	src  ChunkSource
	read map[string]*im.Chunk
}

func (o *readOnce) LoadChunks(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(refs))
	var missAt []int
	var miss []ChunkRef
	for i, ref := range refs {
		if c, ok := o.read[ref.DocID]; ok {
			out[i] = c
			continue
		}
		missAt, miss = append(missAt, i), append(miss, ref)
	}
	if len(miss) == 0 {
		return out, nil
	}
	found, err := o.src.LoadChunks(ctx, miss)
	if err != nil {
		return nil, err
	}
	if len(found) != len(miss) {
		return nil, im.Errorf(im.EINTERNAL, "chunk source answered %d of %d chunks", len(found), len(miss))
	}
	if o.read == nil {
		o.read = make(map[string]*im.Chunk, len(miss))
	}
	for j, i := range missAt {
		out[i] = found[j]
		o.read[miss[j].DocID] = found[j]
	}
	return out, nil
}

func (o *readOnce) Remembered(refs []ChunkRef) ([]*im.Chunk, bool) { return o.src.Remembered(refs) }
