package ingest

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search"
	imsync "github.com/msggate/msggate/internal/sync"
)

// The search index follows the store through the outbox: a change's intent is dropped only
// once the index has taken the change too. When the index fails, the send or mutation still
// succeeds (it is stored and announced), and its intent stays behind for the relay, which
// finishes it again when it is due, re-reading what the store shows and indexing that, until
// the index takes it. So a gateway killed anywhere leaves nothing unindexed, and a change
// indexed twice is the same as once (search.Engine.Apply is idempotent).
//
// A send is indexed before its max seq is raised: until then nobody can revoke or delete the
// message, so its Put never lands after a Remove or Hide of the same message.

// SlotChange is the index change that makes the index show what a slot shows now: the
// message, hidden for those who deleted it for themselves, or nothing when it is revoked,
// deleted for everyone or absent. Reindexing and the relay build their changes with it.
func SlotChange(conversationID string, seq int64, slot *im.Slot) search.Change {
	key := search.Key{ConversationID: conversationID, Seq: seq}
	if !slot.Searchable() {
		return search.Change{Remove: &key}
	}
	d := messageDoc(conversationID, slot.Msg)
	d.Seq = seq
	d.HiddenFor = append([]string(nil), slot.DelList...)
	return search.Change{Put: &d}
}

func messageDoc(conversationID string, m *im.Message) search.Doc {
	return search.Doc{Key: search.Key{ConversationID: conversationID, Seq: m.Seq}, SenderID: m.SendID,
		ContentType: m.ContentType, SendTime: m.SendTime, Text: im.SearchText(m)}
}

// sendChanges are the index changes of a writer's stored placements: a Put of each new
// message. A retry is left out: its slot holds the first attempt, which may be deleted for
// some users by now, and that attempt's own intent indexes it.
func sendChanges(stored []*placement) []search.Change {
	seen := map[search.Key]bool{}
	var out []search.Change
	for _, p := range stored {
		k := search.Key{ConversationID: p.conv, Seq: p.msg.Seq}
		if p.retry || seen[k] {
			continue
		}
		seen[k] = true
		d := messageDoc(p.conv, p.msg)
		out = append(out, search.Change{Put: &d})
	}
	return out
}

// slotChanges are the index changes of a revoke or a delete of seqs in conversationID.
func slotChanges(conversationID string, seqs []int64, revokeOrEveryone bool, userID string) []search.Change {
	out := make([]search.Change, len(seqs))
	for i, s := range seqs {
		k := search.Key{ConversationID: conversationID, Seq: s}
		if revokeOrEveryone {
			out[i] = search.Change{Remove: &k}
		} else {
			out[i] = search.Change{Hide: &search.Hide{Key: k, UserID: userID}}
		}
	}
	return out
}

// index applies changes to the search index, if there is one. Its error is the caller's to
// weigh: it never fails a change the store has.
func (in *Ingester) index(ctx context.Context, changes []search.Change) error {
	if in.opts.Search == nil || len(changes) == 0 {
		return nil
	}
	if err := in.opts.Search.Apply(ctx, changes); err != nil {
		in.logger().WarnContext(ctx, "the search index did not take a change; the relay will index it", "err", err)
		return err
	}
	return nil
}

// indexSettled is index for the changes a late writer (the relay) read from slots
// (SlotChange): they are settled against the store (search.Settle). Reading a slot and
// indexing it is not one step, and a revoke or delete whose store write and index write both
// fall between them would be undone by this write for good: a revoked message counted by
// search again, or one deleted for a user shown to them.
func (in *Ingester) indexSettled(ctx context.Context, changes []search.Change) error {
	if in.opts.Search == nil || len(changes) == 0 {
		return nil
	}
	if err := search.Settle(ctx, in.opts.Search, changes, in.storedChanges); err != nil {
		in.logger().WarnContext(ctx, "the search index did not take a change; the relay will index it", "err", err)
		return err
	}
	return nil
}

// storedChanges reads the slots of keys in one store read and returns each one's SlotChange,
// aligned with keys. It reads MongoDB itself, never the chunks a relay read for a whole batch
// of intents before finishing any (intentChunks), nor the chunk cache, whose copy is as fresh
// as other writers' invalidations make it. A revoke or delete is written to the store before
// its index change is applied, so a read of the store made after our index write sees every
// change that write may have overtaken.
func (in *Ingester) storedChanges(ctx context.Context, keys []search.Key) ([]search.Change, error) {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = im.DocID(k.ConversationID, k.Seq)
	}
	byID, err := in.chunksByID(ctx, dedupe(ids))
	if err != nil {
		return nil, err
	}
	out := make([]search.Change, len(keys))
	for i, k := range keys {
		out[i] = SlotChange(k.ConversationID, k.Seq, byID[im.DocID(k.ConversationID, k.Seq)].Slot(k.Seq))
	}
	return out, nil
}

// chunksByID reads the chunks ids (no repeats) from the store in one read, by doc_id; a chunk
// the store does not hold is nil.
func (in *Ingester) chunksByID(ctx context.Context, ids []string) (map[string]*im.Chunk, error) {
	found, err := in.store.FindChunks(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*im.Chunk, len(ids))
	for i, id := range ids {
		byID[id] = found[i]
	}
	return byID, nil
}

func (in *Ingester) logger() *slog.Logger {
	if in.opts.Logger != nil {
		return in.opts.Logger
	}
	return slog.Default()
}

// indexOrKeep indexes the changes of an announced revoke or delete; when the index fails, it
// asks Outbox.Change to keep the intent for the relay instead of failing the change.
func (in *Ingester) indexOrKeep(ctx context.Context, changes []search.Change) error {
	if err := in.index(ctx, changes); err != nil {
		return fmt.Errorf("%w: %w", imsync.ErrKeepIntent, err)
	}
	return nil
}
