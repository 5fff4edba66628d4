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
	// By chunk index, not doc_id: spelling each seq's doc_id would cost a string per seq.
	byIndex := make(map[int64]*im.Chunk, len(found))
	for i, c := range found {
		byIndex[im.ChunkIndex(groups[i].Seqs[0])] = c
	}
	for i, s := range seqs {
		out[i] = byIndex[im.ChunkIndex(s)].Slot(s)
	}
	return out, nil
}
