package history

import (
	"context"
	"sync"

	"github.com/msggate/msggate/internal/im"
)

// Chunks is the ChunkSource over a store: with a Memory, decoded copies in the process first,
// for refs that name their conversation's chunks version, and the store for the rest; without
// one, the store for all. It is safe for concurrent use once built.
type Chunks struct {
	// Store reads what memory does not hold: msggate's Redis tier over MongoDB (cache.ReadThrough),
	// or an OpenIM deployment's store.
	Store ChunkFinder
	// Memory, when set, keeps the chunks read under a version and serves them to readers that
	// name the same version, with no round trip. nil: nothing is kept.
	Memory *ChunkMemory

	misses sharedMisses
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
	found, err := c.misses.read(ctx, c.Store, refs, missAt)
	if err != nil {
		return nil, err
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

// sharedMisses lets concurrent readers that miss one chunk under one version share one read of
// the Store. When a conversation's chunks version moves (a write; in OpenIM mode also the end
// of the memory's period), every request under way misses the same chunks at once, and each
// would read them. Sharing is sound as in the Redis tier's shared reads: a reader that saw
// version v reads after every write acknowledged before v existed, so a read started by any
// reader that saw v reflects them all. A ref without a version is never shared.
type sharedMisses struct {
	mu      sync.Mutex
	flights map[ChunkRef]*missRead
}

// missRead is one Store read of a chunk under way; done closes once chunk and err are set.
type missRead struct {
	done  chan struct{}
	chunk *im.Chunk
	err   error
}

// read returns the chunks of refs at missAt, aligned with missAt: it joins the reads under way
// for the same chunk and version and reads the rest in one Store call, which others may join.
// A joined read that failed (its reader's context ended, say) is made again here.
func (s *sharedMisses) read(ctx context.Context, store ChunkFinder, refs []ChunkRef, missAt []int) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(missAt))
	var own []int // positions in missAt this reader reads
	led := map[int]*missRead{}
	joined := map[int]*missRead{}
	s.mu.Lock()
	for j, i := range missAt {
		ref := refs[i]
		if ref.Version == "" {
			own = append(own, j)
			continue
		}
		if f, ok := s.flights[ref]; ok {
			joined[j] = f
			continue
		}
		if s.flights == nil {
			s.flights = map[ChunkRef]*missRead{}
		}
		f := &missRead{done: make(chan struct{})}
		s.flights[ref] = f
		led[j] = f
		own = append(own, j)
	}
	s.mu.Unlock()

	if len(own) > 0 {
		found, err := find(ctx, store, refs, missAt, own)
		s.mu.Lock()
		for k, j := range own {
			if f, ok := led[j]; ok {
				if err == nil {
					f.chunk = found[k]
				}
				f.err = err
				delete(s.flights, refs[missAt[j]])
				close(f.done)
			}
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for k, j := range own {
			out[j] = found[k]
		}
	}

	var retry []int
	for j, f := range joined {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, im.Unavailable("message store", context.Cause(ctx))
		}
		if f.err != nil {
			retry = append(retry, j)
			continue
		}
		out[j] = f.chunk
	}
	if len(retry) > 0 {
		found, err := find(ctx, store, refs, missAt, retry)
		if err != nil {
			return nil, err
		}
		for k, j := range retry {
			out[j] = found[k]
		}
	}
	return out, nil
}

// find reads from store the chunks of refs at missAt[j] for each j of at, aligned with at.
func find(ctx context.Context, store ChunkFinder, refs []ChunkRef, missAt, at []int) ([]*im.Chunk, error) {
	ids := make([]string, len(at))
	for k, j := range at {
		ids[k] = refs[missAt[j]].DocID
	}
	found, err := store.FindChunks(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(found) != len(ids) {
		return nil, im.Errorf(im.EINTERNAL, "chunk store answered %d of %d chunks", len(found), len(ids))
	}
	return found, nil
}
