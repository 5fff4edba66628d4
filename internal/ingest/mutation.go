package ingest

import (
	"context"
	"sort"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Actor is who changes messages: the user and, in a group, their role there.
type Actor struct {
	UserID string
	Role   int32
}

// readSlots reads the slots of seqs straight from MongoDB: permission checks must see the
// truth, not a cached copy. The result is aligned with seqs.
func (in *Ingester) readSlots(ctx context.Context, conversationID string, seqs []int64) ([]*im.Slot, error) {
	return history.Slots(ctx, history.ChunkFunc(in.store.FindChunks), conversationID, seqs)
}

// visible checks that every seq is one the actor may see: within [their min seq, max seq].
func (in *Ingester) visible(ctx context.Context, actor string, conv im.Conversation, seqs []int64) error {
	st, err := in.ledger.States(ctx, actor, []string{conv.ID})
	if err != nil {
		return err
	}
	for _, s := range seqs {
		if s < st[0].VisibleMin() || s > st[0].MaxSeq {
			return im.Errorf(im.ENOTFOUND, "no message at seq %d in %s", s, conv.ID)
		}
	}
	return nil
}

// Revoke withholds a message's content from everyone (see im.CanActOnMessage for who may).
// Revoking a revoked message changes nothing. It returns the message as the actor now sees it.
func (in *Ingester) Revoke(ctx context.Context, actor Actor, conv im.Conversation, seq int64, now int64) (im.MessageView, error) {
	if err := in.visible(ctx, actor.UserID, conv, []int64{seq}); err != nil {
		return im.MessageView{}, err
	}
	slots, err := in.readSlots(ctx, conv.ID, []int64{seq})
	if err != nil {
		return im.MessageView{}, err
	}
	slot := slots[0]
	switch {
	case slot == nil || slot.Msg == nil || slot.Msg.Status == im.DeletedMessageStatus:
		return im.MessageView{}, im.Errorf(im.ENOTFOUND, "no message at seq %d in %s", seq, conv.ID)
	case !im.CanActOnMessage(conv.Kind, actor.UserID, actor.Role, slot.Msg.SendID):
		return im.MessageView{}, im.Errorf(im.EFORBIDDEN, "only the sender or a group's owner or admin may revoke this message")
	}
	if slot.Revoke != nil {
		// Revoked before: announced by that revoke, or from its intent (intent.go). Its writer
		// may have died before it invalidated the chunk, and this call acknowledges the
		// revoke: readers must see it from now on.
		if err := in.cache.InvalidateChunks(ctx, []string{im.DocID(conv.ID, seq)}); err != nil {
			return im.MessageView{}, err
		}
		return im.ViewSlot(conv.ID, seq, slot, actor.UserID), nil
	}
	intent := &chunkstore.Intent{Kind: chunkstore.IntentRevoke, ConversationID: conv.ID, UserID: actor.UserID, Seqs: []int64{seq}}
	r := im.Revoke{UserID: actor.UserID, Role: actor.Role, Time: now}
	err = in.outbox.Change(ctx, intent, func() error {
		_, err := in.store.Revoke(ctx, conv.ID, seq, r)
		return err
	}, func() error {
		if err := in.mentions.Remove(ctx, conv.ID, "", mentioningSeqs([]*im.Message{slot.Msg})); err != nil {
			return err
		}
		if err := in.cache.InvalidateChunks(ctx, []string{im.DocID(conv.ID, seq)}); err != nil {
			return err
		}
		if err := in.events.AnnounceRevoke(ctx, conv, seq); err != nil {
			return err
		}
		return in.indexOrKeep(ctx, slotChanges(conv.ID, []int64{seq}, true, ""))
	})
	if err != nil {
		return im.MessageView{}, err
	}
	slot.Revoke = &r
	return im.ViewSlot(conv.ID, seq, slot, actor.UserID), nil
}

// Delete hides messages from the actor only, or wipes them for everyone (the sender of each,
// or a group's owner or admin). Seqs holding no message are skipped. It returns the messages
// as the actor now sees them, aligned with seqs.
func (in *Ingester) Delete(ctx context.Context, actor Actor, conv im.Conversation, seqs []int64, forEveryone bool) ([]im.MessageView, error) {
	if len(seqs) > im.MaxSeqsPerRequest {
		return nil, im.Errorf(im.ELIMIT, "at most %d seqs per request, got %d", im.MaxSeqsPerRequest, len(seqs))
	}
	uniq := uniqueSeqs(seqs)
	if err := in.visible(ctx, actor.UserID, conv, uniq); err != nil {
		return nil, err
	}
	slots, err := in.readSlots(ctx, conv.ID, uniq)
	if err != nil {
		return nil, err
	}
	var present, already []int64
	var msgs []*im.Message
	for i, slot := range slots {
		if slot == nil || slot.Msg == nil {
			continue
		}
		// Seqs deleted already were announced by the delete that deleted them, or will be from
		// its intent.
		if slot.Msg.Status == im.DeletedMessageStatus || (!forEveryone && slot.DeletedFor(actor.UserID)) {
			already = append(already, uniq[i])
			continue
		}
		if forEveryone && !im.CanActOnMessage(conv.Kind, actor.UserID, actor.Role, slot.Msg.SendID) {
			return nil, im.Errorf(im.EFORBIDDEN, "only the sender or a group's owner or admin may delete seq %d for everyone", uniq[i])
		}
		present = append(present, uniq[i])
		msgs = append(msgs, slot.Msg)
	}
	if len(already) > 0 {
		// Their writer may have died before it invalidated the chunks, and this call
		// acknowledges the delete: readers must see it from now on.
		if err := in.cache.InvalidateChunks(ctx, docIDsOf(conv.ID, already)); err != nil {
			return nil, err
		}
	}
	if len(present) > 0 {
		if err := in.deleteAndAnnounce(ctx, actor.UserID, conv, present, msgs, forEveryone); err != nil {
			return nil, err
		}
	}
	bySeq := make(map[int64]*im.Slot, len(uniq))
	for i, s := range uniq {
		slot := slots[i]
		if slot != nil && slot.Msg != nil {
			copySlot := *slot
			if forEveryone {
				copySlot.Msg = chunkstore.Tombstone(slot.Msg)
			} else {
				copySlot.DelList = append(append([]string(nil), slot.DelList...), actor.UserID)
			}
			slot = &copySlot
		}
		bySeq[s] = slot
	}
	out := make([]im.MessageView, len(seqs))
	for i, s := range seqs {
		out[i] = im.ViewSlot(conv.ID, s, bySeq[s], actor.UserID)
	}
	return out, nil
}

// deleteAndAnnounce deletes the messages at seqs, for everyone or for userID, and announces
// it, under an intent (see imsync.Outbox.BeginIntent).
func (in *Ingester) deleteAndAnnounce(ctx context.Context, userID string, conv im.Conversation, seqs []int64, msgs []*im.Message, forEveryone bool) error {
	intent := &chunkstore.Intent{Kind: chunkstore.IntentDelete, ConversationID: conv.ID, UserID: userID, Seqs: seqs, ForEveryone: forEveryone}
	return in.outbox.Change(ctx, intent, func() error {
		if forEveryone {
			return in.store.DeleteForEveryone(ctx, conv.ID, msgs)
		}
		return in.store.DeleteForUser(ctx, conv.ID, seqs, userID)
	}, func() error {
		if err := in.mentions.Remove(ctx, conv.ID, mentionedFor(userID, forEveryone), mentioningSeqs(msgs)); err != nil {
			return err
		}
		if err := in.cache.InvalidateChunks(ctx, docIDsOf(conv.ID, seqs)); err != nil {
			return err
		}
		if err := in.events.AnnounceDelete(ctx, userID, conv, seqs, forEveryone, imsync.IntentKey(intent.ID)); err != nil {
			return err
		}
		return in.indexOrKeep(ctx, slotChanges(conv.ID, seqs, forEveryone, userID))
	})
}

func uniqueSeqs(seqs []int64) []int64 {
	out := append([]int64(nil), seqs...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	n := 0
	for i, s := range out {
		if i == 0 || s != out[i-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
