package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Slots returns the slots that hold seqs in one conversation, aligned with seqs: nil where
// no chunk or slot holds a seq. It asks chunks once, for every chunk the seqs fall into.
func Slots(ctx context.Context, chunks ChunkSource, conversationID string, seqs []int64) ([]*im.Slot, error) {
	return slotsAt(ctx, chunks, conversationID, "", seqs)
}

// slotsAt is Slots for a reader that read the conversation's chunks version with its state
// (version, "" when unknown), so that a source that keeps copies may answer from them.
func slotsAt(ctx context.Context, chunks ChunkSource, conversationID, version string, seqs []int64) ([]*im.Slot, error) {
	out := make([]*im.Slot, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	groups := im.GroupSeqsByDocID(conversationID, seqs)
	refs := make([]ChunkRef, len(groups))
	for i, g := range groups {
		refs[i] = ChunkRef{DocID: g.DocID, Version: version}
	}
	found, err := chunks.LoadChunks(ctx, refs)
	if err != nil {
		return nil, err
	}
	if len(found) != len(refs) {
		return nil, im.Errorf(im.EINTERNAL, "chunk source answered %d of %d chunks", len(found), len(refs))
	}
	byDoc := make(map[string]*im.Chunk, len(found))
	for i, c := range found {
		byDoc[refs[i].DocID] = c
	}
	for i, s := range seqs {
		out[i] = byDoc[im.DocID(conversationID, s)].Slot(s)
	}
	return out, nil
}
