package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// sendIntent is the intent of writing the placements: the seqs they were given and what
// identifies each message in its slot.
func sendIntent(ps []*placement) *chunkstore.Intent {
	in := &chunkstore.Intent{Kind: chunkstore.IntentSend, ConversationID: ps[0].conv}
	for _, p := range ps {
		in.Messages = append(in.Messages, chunkstore.IntentMessage{ConversationID: p.conv, Seq: p.msg.Seq,
			SendID: p.msg.SendID, SendTime: p.msg.SendTime, ClientMsgID: p.msg.ClientMsgID, ServerMsgID: p.msg.ServerMsgID})
	}
	return in
}

// holds reports whether a slot holds the message an intent wrote: by client message ID when
// the message has one (a retried send fills its slot under the same one), else by the server
// message ID its writer gave it.
func holds(slot *im.Slot, m chunkstore.IntentMessage) bool {
	if slot == nil || slot.Msg == nil {
		return false
	}
	if m.ClientMsgID != "" {
		return slot.Msg.ClientMsgID == m.ClientMsgID
	}
	return slot.Msg.ServerMsgID == m.ServerMsgID
}

// FinishIntent finishes a change whose writer left its intent behind (see Relay): what the
// store shows of it is made visible and announced. Reads and clears are the ledger's.
func (in *Ingester) FinishIntent(ctx context.Context, it chunkstore.Intent) (imsync.IntentOutcome, error) {
	switch it.Kind {
	case chunkstore.IntentSend:
		return in.finishSendIntent(ctx, it)
	case chunkstore.IntentRevoke, chunkstore.IntentDelete:
		return in.finishSlotIntent(ctx, it)
	}
	return in.ledger.FinishIntent(ctx, it)
}

func (in *Ingester) finishSendIntent(ctx context.Context, it chunkstore.Intent) (imsync.IntentOutcome, error) {
	byConv := map[string][]chunkstore.IntentMessage{}
	var convs []string
	for _, m := range it.Messages {
		if _, ok := byConv[m.ConversationID]; !ok {
			convs = append(convs, m.ConversationID)
		}
		byConv[m.ConversationID] = append(byConv[m.ConversationID], m)
	}
	var stored []imsync.StoredMessage
	var docIDs []string
	missing := false
	for _, conv := range convs {
		ms := byConv[conv]
		seqs := make([]int64, len(ms))
		for i, m := range ms {
			seqs[i] = m.Seq
		}
		slots, err := in.readSlots(ctx, conv, seqs)
		if err != nil {
			return imsync.IntentPending, err
		}
		for i, m := range ms {
			if !holds(slots[i], m) {
				missing = true
				continue
			}
			stored = append(stored, imsync.StoredMessage{ConversationID: conv, Seq: m.Seq, SendID: m.SendID, SendTime: m.SendTime})
			docIDs = append(docIDs, im.DocID(conv, m.Seq))
		}
	}
	if len(stored) > 0 {
		if err := in.finishSend(ctx, sortStored(stored), dedupe(docIDs)); err != nil {
			return imsync.IntentPending, err
		}
	}
	if missing {
		return imsync.Unverified(it), nil
	}
	return imsync.IntentDone, nil
}

// finishSlotIntent finishes a revoke or a delete: the seqs whose slots show the change are
// announced, once all of them do, or once the intent is too old for the rest to come.
func (in *Ingester) finishSlotIntent(ctx context.Context, it chunkstore.Intent) (imsync.IntentOutcome, error) {
	conv, err := im.ParseConversationID(it.ConversationID)
	if err != nil {
		return imsync.IntentDone, err
	}
	slots, err := in.readSlots(ctx, conv.ID, it.Seqs)
	if err != nil {
		return imsync.IntentPending, err
	}
	var done []int64
	for i, slot := range slots {
		if slot == nil || slot.Msg == nil {
			continue
		}
		switch {
		case it.Kind == chunkstore.IntentRevoke && slot.Revoke != nil,
			it.Kind == chunkstore.IntentDelete && it.ForEveryone && slot.Msg.Status == im.DeletedMessageStatus,
			it.Kind == chunkstore.IntentDelete && !it.ForEveryone && deletedFor(slot, it.UserID):
			done = append(done, it.Seqs[i])
		}
	}
	if len(done) < len(it.Seqs) {
		if out := imsync.Unverified(it); out == imsync.IntentPending || len(done) == 0 {
			return out, nil
		}
	}
	if err := in.cache.InvalidateChunks(ctx, docIDsOf(conv.ID, done)); err != nil {
		return imsync.IntentPending, err
	}
	if it.Kind == chunkstore.IntentRevoke {
		err = in.ledger.AnnounceRevoke(ctx, conv, done[0])
	} else {
		err = in.ledger.AnnounceDelete(ctx, it.UserID, conv, done, it.ForEveryone, imsync.IntentKey(it.ID))
	}
	if err != nil {
		return imsync.IntentPending, err
	}
	return imsync.IntentDone, nil
}

func deletedFor(slot *im.Slot, userID string) bool {
	for _, u := range slot.DelList {
		if u == userID {
			return true
		}
	}
	return false
}
