package cache

import (
	"context"
	"log/slog"

	"github.com/msggate/msggate/internal/im"
)

// ChunkFinder reads chunks from the store behind the cache, aligned with docIDs, nil where none
// exists: msggate's own (chunkstore.Store), or an OpenIM deployment's (openim.Store).
type ChunkFinder interface {
	FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error)
}

// ReadThrough reads a store's chunks through the cache: Redis first, the store for the misses,
// and the misses written back to Redis. It is itself a ChunkFinder, so the read path may keep
// its decoded copies in process in front of it (history.Chunks). It is safe for concurrent use.
type ReadThrough struct {
	store  ChunkFinder
	cache  *Cache
	logger *slog.Logger
	reads  sharedReads

	// ObserveCache, when set, is told how many chunks each read found in the cache and how
	// many it had to look up in the store (all of them while the cache fails). Set it before
	// first use; the server feeds it to metrics.
	ObserveCache func(hits, misses int)
}

// NewReadThrough returns store's chunks read through c. logger receives cache failures that
// were worked around; nil means slog.Default(). Every write to the store's chunks must invalidate
// them in the cache (InvalidateChunks) before it is acknowledged (msggate's writers), or as
// soon as it is known (OpenIM's, by its feed).
func NewReadThrough(store ChunkFinder, c *Cache, logger *slog.Logger) *ReadThrough {
	if logger == nil {
		logger = slog.Default()
	}
	return &ReadThrough{store: store, cache: c, logger: logger}
}

// FindChunks returns the chunks named by docIDs, aligned with them; nil where no chunk exists.
// It costs one Redis round trip to read, and on misses one store read (a MongoDB $in query)
// plus one Redis round trip to fill; concurrent misses of one chunk at one version share their
// store read (sharedReads). A Redis failure is logged and served from the store; a store
// failure is an error, never an empty answer.
func (r *ReadThrough) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(docIDs))
	entries, err := r.cache.GetChunks(ctx, docIDs)
	if err != nil {
		r.logger.WarnContext(ctx, "reading chunks from MongoDB: cache failed", "err", err)
		entries = make([]ChunkEntry, len(docIDs))
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
	var fills []ChunkFill
	for j, c := range found {
		i := missAt[j]
		out[i] = c
		// Absent chunks are not cached: a chunk appears as soon as its first message is
		// written, and caching its absence would need the same invalidation for no gain.
		if c != nil {
			fills = append(fills, ChunkFill{Chunk: c, Version: entries[i].Version})
		}
	}
	if len(fills) > 0 {
		if err := r.cache.FillChunks(ctx, fills); err != nil {
			r.logger.WarnContext(ctx, "filling chunk cache failed", "err", err)
		}
	}
	return out, nil
}

func versionsAt(entries []ChunkEntry, at []int) []string {
	out := make([]string, len(at))
	for j, i := range at {
		out[j] = entries[i].Version
	}
	return out
}
