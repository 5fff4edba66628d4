package ingest

import (
	"context"
	"errors"
	"slices"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search"
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

// holds reports whether a slot holds the message an intent wrote: the same send (im.SameMessage)
// when the message has a client message ID (a retried send fills its slot under the same one),
// else the server message ID its writer gave it.
func holds(slot *im.Slot, m chunkstore.IntentMessage) bool {
	if slot == nil || slot.Msg == nil {
		return false
	}
	if m.ClientMsgID == "" {
		return slot.Msg.ServerMsgID == m.ServerMsgID
	}
	return im.SameMessage(slot.Msg, &im.Message{SendID: m.SendID, ClientMsgID: m.ClientMsgID})
}

// FinishIntent finishes a change whose writer left its intent behind (see Relay): what the
// store shows of it is made visible and announced. Reads and clears are the ledger's. chunks
// is where the slots of sends, revokes and deletes are read: the store, or what a relay read
// from it for a whole batch of intents at once (intentChunks).
func (in *Ingester) FinishIntent(ctx context.Context, chunks history.ChunkSource, it chunkstore.Intent) (imsync.IntentOutcome, error) {
	switch it.Kind {
	case chunkstore.IntentSend:
		return in.finishSendIntent(ctx, chunks, it)
	case chunkstore.IntentRevoke, chunkstore.IntentDelete:
		return in.finishSlotIntent(ctx, chunks, it)
	}
	return in.ledger.FinishIntent(ctx, it)
}

// intentDocIDs names the chunks that finishing the intents reads.
func intentDocIDs(its []chunkstore.Intent) []string {
	var ids []string
	for _, it := range its {
		for _, m := range it.Messages {
			ids = append(ids, im.DocID(m.ConversationID, m.Seq))
		}
		if it.Kind == chunkstore.IntentRevoke || it.Kind == chunkstore.IntentDelete {
			ids = append(ids, docIDsOf(it.ConversationID, it.Seqs)...)
		}
	}
	return dedupe(ids)
}

// intentChunks reads, in one store read, the chunks that finishing the intents needs, and
// serves them: a relay that finds many intents after an outage must not add a read per intent
// to a store that is just coming back.
func (in *Ingester) intentChunks(ctx context.Context, its []chunkstore.Intent) (history.ChunkSource, error) {
	byID, err := in.chunksByID(ctx, intentDocIDs(its))
	if err != nil {
		return nil, err
	}
	return history.ChunkFunc(func(_ context.Context, docIDs []string) ([]*im.Chunk, error) {
		out := make([]*im.Chunk, len(docIDs))
		for i, id := range docIDs {
			c, ok := byID[id]
			if !ok {
				return nil, im.Errorf(im.EINTERNAL, "chunk %s was not read for the relay", id)
			}
			out[i] = c
		}
		return out, nil
	}), nil
}

func (in *Ingester) finishSendIntent(ctx context.Context, chunks history.ChunkSource, it chunkstore.Intent) (imsync.IntentOutcome, error) {
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
	var changes []search.Change
	mentions := mentionsByConv{}
	missing := false
	for _, conv := range convs {
		ms := byConv[conv]
		seqs := make([]int64, len(ms))
		for i, m := range ms {
			seqs[i] = m.Seq
		}
		slots, err := history.Slots(ctx, chunks, conv, seqs)
		if err != nil {
			return imsync.IntentPending, err
		}
		for i, m := range ms {
			if !holds(slots[i], m) {
				missing = true
				continue
			}
			stored = append(stored, imsync.StoredMessage{ConversationID: conv, Seq: m.Seq, SendID: m.SendID, SendTime: m.SendTime})
			changes = append(changes, SlotChange(conv, m.Seq, slots[i]))
			mentions.addSlot(conv, m.Seq, slots[i])
			docIDs = append(docIDs, im.DocID(conv, m.Seq))
		}
	}
	if len(stored) > 0 {
		stored = sortStored(stored)
		// The slots were read from chunks, which may be older than a revoke or delete already
		// indexed: the Puts are settled against the store.
		indexed, err := in.finishSend(ctx, stored, stored, mentions, dedupe(docIDs), changes, in.indexSettled)
		if err != nil {
			return imsync.IntentPending, err
		}
		if !indexed {
			return imsync.IntentPending, errIndexBehind
		}
	}
	if missing {
		return imsync.Unverified(it), nil
	}
	return imsync.IntentDone, nil
}

// finishSlotIntent finishes a revoke or a delete: the seqs whose slots show the change are
// announced, once all of them do, or once the intent is too old for the rest to come.
func (in *Ingester) finishSlotIntent(ctx context.Context, chunks history.ChunkSource, it chunkstore.Intent) (imsync.IntentOutcome, error) {
	conv, err := im.ParseConversationID(it.ConversationID)
	if err != nil {
		return imsync.IntentDone, err
	}
	slots, err := history.Slots(ctx, chunks, conv.ID, it.Seqs)
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
			it.Kind == chunkstore.IntentDelete && !it.ForEveryone && slot.DeletedFor(it.UserID):
			done = append(done, it.Seqs[i])
		}
	}
	if len(done) < len(it.Seqs) {
		if out := imsync.Unverified(it); out == imsync.IntentPending || len(done) == 0 {
			return out, nil
		}
	}
	userID := mentionedFor(it.UserID, it.ForEveryone)
	if it.Kind == chunkstore.IntentRevoke {
		userID = ""
	}
	if err := in.mentions.Remove(ctx, conv.ID, userID, done); err != nil {
		return imsync.IntentPending, err
	}
	if err := in.cache.InvalidateChunks(ctx, docIDsOf(conv.ID, done)); err != nil {
		return imsync.IntentPending, err
	}
	if it.Kind == chunkstore.IntentRevoke {
		err = in.events.AnnounceRevoke(ctx, conv, done[0])
	} else {
		err = in.events.AnnounceDelete(ctx, it.UserID, conv, done, it.ForEveryone, imsync.IntentKey(it.ID))
	}
	if err != nil {
		return imsync.IntentPending, err
	}
	// What the store shows of each seq now, so a change indexed late is indexed as it ended,
	// settled against the store: chunks may predate a later change of the same slot (a revoke
	// after a delete for me) that is indexed already.
	changes := make([]search.Change, 0, len(done))
	for i, slot := range slots {
		if slices.Contains(done, it.Seqs[i]) {
			changes = append(changes, SlotChange(conv.ID, it.Seqs[i], slot))
		}
	}
	if in.indexSettled(ctx, changes) != nil {
		return imsync.IntentPending, errIndexBehind
	}
	return imsync.IntentDone, nil
}

// errIndexBehind keeps an intent whose change is announced but not indexed: the relay tries
// it again when it is due.
var errIndexBehind = errors.New("the search index did not take the change yet")
