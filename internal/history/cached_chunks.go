package history

import (
	"context"
	"log/slog"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// CachedChunks is msggate's own chunk source: Redis first, MongoDB for the misses, and the
// misses written back to Redis. It is safe for concurrent use.
type CachedChunks struct {
	store  *chunkstore.Store
	cache  *cache.Cache
	logger *slog.Logger

	// ObserveCache, when set, is told how many chunks each load found in the cache and how
	// many it had to look up in MongoDB (all of them while the cache fails). Set it before
	// first use; the server feeds it to metrics.
	ObserveCache func(hits, misses int)
}

// NewCachedChunks returns msggate's chunk source over its store and cache. logger receives
// cache failures that were worked around; nil means slog.Default().
func NewCachedChunks(store *chunkstore.Store, c *cache.Cache, logger *slog.Logger) *CachedChunks {
	if logger == nil {
		logger = slog.Default()
	}
	return &CachedChunks{store: store, cache: c, logger: logger}
}

// LoadChunks returns the chunks named by docIDs, aligned with them; nil where no chunk exists.
// It costs one Redis round trip to read, and on misses one MongoDB $in query plus one Redis
// round trip to fill. A Redis failure is logged and served from MongoDB; a MongoDB failure is
// an error, never an empty answer.
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
	found, err := r.store.FindChunks(ctx, missIDs)
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
