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
// (version, "" when unknown), so that a VersionedChunkSource may answer from its copies.
func slotsAt(ctx context.Context, chunks ChunkSource, conversationID, version string, seqs []int64) ([]*im.Slot, error) {
	out := make([]*im.Slot, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	groups := im.GroupSeqsByDocID(conversationID, seqs)
	docIDs := make([]string, len(groups))
	for i, g := range groups {
		docIDs[i] = g.DocID
	}
	var found []*im.Chunk
	var err error
	if vs, ok := chunks.(VersionedChunkSource); ok && version != "" {
		refs := make([]ChunkRef, len(docIDs))
		for i, id := range docIDs {
			refs[i] = ChunkRef{DocID: id, Version: version}
		}
		found, err = vs.LoadChunkRefs(ctx, refs)
	} else {
		found, err = chunks.LoadChunks(ctx, docIDs)
	}
	if err != nil {
		return nil, err
	}
	if len(found) != len(docIDs) {
		return nil, im.Errorf(im.EINTERNAL, "chunk source answered %d of %d chunks", len(found), len(docIDs))
	}
	byDoc := make(map[string]*im.Chunk, len(found))
	for i, c := range found {
		byDoc[docIDs[i]] = c
	}
	for i, s := range seqs {
		out[i] = byDoc[im.DocID(conversationID, s)].Slot(s)
	}
	return out, nil
}
