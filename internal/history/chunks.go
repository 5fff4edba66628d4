package history

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Chunks is the ChunkSource over a store: with a Memory, decoded copies in the process first,
// for refs that name their conversation's chunks version, and the store for the rest; without
// one, the store for all. It is safe for concurrent use once built.
type Chunks struct {
	// Store reads what memory does not hold: msggate's Redis tier over MongoDB (cache.Chunks),
	// or an OpenIM deployment's store.
	Store ChunkFinder
	// Memory, when set, keeps the chunks read under a version and serves them to readers that
	// name the same version, with no round trip. nil: nothing is kept.
	Memory *ChunkMemory
}

// LoadChunks serves from Memory each chunk held under the version its ref names, reads the
// others from the Store in one call, and keeps those under their refs' versions.
func (c *Chunks) LoadChunks(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error) {
	if c.Memory == nil {
		return c.Store.FindChunks(ctx, docIDsOf(refs))
	}
	out := make([]*im.Chunk, len(refs))
	// The misses are gathered only when there are some: the hot path, every chunk in memory,
	// allocates nothing but its answer.
	var missAt []int
	for i, ref := range refs {
		if ref.Version != "" {
			if ch := c.Memory.Get(ref.DocID, ref.Version); ch != nil {
				out[i] = ch
				continue
			}
		}
		if missAt == nil {
			missAt = make([]int, 0, len(refs)-i)
		}
		missAt = append(missAt, i)
	}
	if len(missAt) == 0 {
		return out, nil
	}
	missIDs := make([]string, len(missAt))
	for j, i := range missAt {
		missIDs[j] = refs[i].DocID
	}
	found, err := c.Store.FindChunks(ctx, missIDs)
	if err != nil {
		return nil, err
	}
	if len(found) != len(missIDs) {
		return nil, im.Errorf(im.EINTERNAL, "chunk store answered %d of %d chunks", len(found), len(missIDs))
	}
	for j, ch := range found {
		i := missAt[j]
		out[i] = ch
		// Read after the version was: current at least up to it. An absent chunk is not kept,
		// as the Redis tier does not keep one either.
		if ch != nil && refs[i].Version != "" {
			c.Memory.Put(refs[i].Version, ch)
		}
	}
	return out, nil
}

// Remembered returns the chunks Memory holds under refs' versions, and whether it holds all of
// them; without a Memory, nil, false.
func (c *Chunks) Remembered(refs []ChunkRef) ([]*im.Chunk, bool) {
	if c.Memory == nil {
		return nil, false
	}
	return c.Memory.GetAll(refs)
}
