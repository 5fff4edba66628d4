package history

import (
	"context"
	"log/slog"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// ChunkFinder reads chunks from the store behind the cache, aligned with docIDs, nil where
// none exists: msggate's own (chunkstore.Store), or an OpenIM deployment's (OpenIMChunkFinder).
type ChunkFinder interface {
	FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error)
}

// CachedChunks is a chunk source with a cache tier: Redis first, the store for the misses, and the
// misses written back to Redis; with a Memory, decoded copies in the process before Redis,
// for readers that name their conversation's chunks version (LoadChunkRefs). It is safe for
// concurrent use.
type CachedChunks struct {
	store  ChunkFinder
	cache  *cache.Cache
	logger *slog.Logger
	reads  sharedReads

	// Memory, when set, keeps the chunks read under a version and serves them to readers that
	// name the same version, with no round trip. Set it before first use.
	Memory *ChunkMemory

	// ObserveCache, when set, is told how many chunks each load found in the cache and how
	// many it had to look up in MongoDB (all of them while the cache fails). Set it before
	// first use; the server feeds it to metrics.
	ObserveCache func(hits, misses int)
}

// NewCachedChunks returns a chunk source over a store and msggate's cache. logger receives
// cache failures that were worked around; nil means slog.Default(). Every write to the
// store's chunks must invalidate them in the cache (cache.InvalidateChunks) before it is
// acknowledged (msggate's writers), or as soon as it is known (OpenIM's, by its feed).
func NewCachedChunks(store ChunkFinder, c *cache.Cache, logger *slog.Logger) *CachedChunks {
	if logger == nil {
		logger = slog.Default()
	}
	return &CachedChunks{store: store, cache: c, logger: logger}
}

// LoadChunks returns the chunks named by docIDs, aligned with them; nil where no chunk exists.
// It costs one Redis round trip to read, and on misses one MongoDB $in query plus one Redis
// round trip to fill; concurrent misses of one chunk at one version share their MongoDB read
// (sharedReads). A Redis failure is logged and served from MongoDB; a MongoDB failure is an
// error, never an empty answer.
func (r *CachedChunks) LoadChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(docIDs))
	entries, err := r.cache.GetChunks(ctx, docIDs)
	if err != nil {
		r.logger.WarnContext(ctx, "reading chunks from MongoDB: cache failed", "err", err)
		entries = make([]cache.ChunkEntry, len(docIDs))
	}
	var missIDs []string
	var missAt []int
	for i, e := range entries {
		if e.Chunk != nil {
			out[i] = e.Chunk
			continue
		}
		missIDs = append(missIDs, docIDs[i])
		missAt = append(missAt, i)
	}
	if r.ObserveCache != nil {
		r.ObserveCache(len(docIDs)-len(missIDs), len(missIDs))
	}
	if len(missIDs) == 0 {
		return out, nil
	}
	found, err := r.reads.find(ctx, r.store, missIDs, versionsAt(entries, missAt))
	if err != nil {
		return nil, err
	}
	var fills []cache.ChunkFill
	for j, c := range found {
		i := missAt[j]
		out[i] = c
		// Absent chunks are not cached: a chunk appears as soon as its first message is
		// written, and caching its absence would need the same invalidation for no gain.
		if c != nil {
			fills = append(fills, cache.ChunkFill{Chunk: c, Version: entries[i].Version})
		}
	}
	if err == nil && len(fills) > 0 {
		if err := r.cache.FillChunks(ctx, fills); err != nil {
			r.logger.WarnContext(ctx, "filling chunk cache failed", "err", err)
		}
	}
	return out, nil
}

func versionsAt(entries []cache.ChunkEntry, at []int) []string {
	out := make([]string, len(at))
	for j, i := range at {
		out[j] = entries[i].Version
	}
	return out
}

// LoadChunkRefs is LoadChunks for readers that read their conversation's chunks version with
// its state: a chunk held in Memory under the version named is served from there; the others
// are read as LoadChunks reads them and kept under that version.
func (r *CachedChunks) LoadChunkRefs(ctx context.Context, refs []ChunkRef) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(refs))
	missIDs := make([]string, 0, len(refs))
	var missAt []int
	for i, ref := range refs {
		if r.Memory != nil && ref.Version != "" {
			if c := r.Memory.Get(ref.DocID, ref.Version); c != nil {
				out[i] = c
				continue
			}
		}
		missIDs = append(missIDs, ref.DocID)
		missAt = append(missAt, i)
	}
	if len(missIDs) == 0 {
		return out, nil
	}
	found, err := r.LoadChunks(ctx, missIDs)
	if err != nil {
		return nil, err
	}
	for j, c := range found {
		i := missAt[j]
		out[i] = c
		// Read after the version was: current at least up to it. An absent chunk is not kept,
		// as the Redis tier does not keep one either.
		if c != nil && r.Memory != nil && refs[i].Version != "" {
			r.Memory.Put(refs[i].Version, c)
		}
	}
	return out, nil
}

// Remembered returns the chunks Memory holds under refs' versions, and whether it holds all of
// them (then no round trip is needed, and no batch worth waiting for).
func (r *CachedChunks) Remembered(refs []ChunkRef) ([]*im.Chunk, bool) {
	if r.Memory == nil {
		return nil, false
	}
	out := make([]*im.Chunk, len(refs))
	for i, ref := range refs {
		if ref.Version == "" {
			return nil, false
		}
		if out[i] = r.Memory.Peek(ref.DocID, ref.Version); out[i] == nil {
			return nil, false
		}
	}
	for _, ref := range refs {
		r.Memory.Get(ref.DocID, ref.Version) // counts the hits and refreshes their recency
	}
	return out, true
}
