package cache

import (
	"context"
	"sync"

	"github.com/msggate/msggate/internal/im"
)

// sharedReads lets concurrent cache misses of one chunk at one version share one MongoDB read.
// A new message invalidates its chunk and is then fetched by every device of every member at
// about the same moment; without sharing, each of them reads the whole chunk from MongoDB.
//
// Sharing is sound because of how versions move: a write bumps the chunk's version in Redis
// after it reached MongoDB and before it is acknowledged. A reader that saw version v read it
// after every write acknowledged before v existed, so a read started by any reader that saw v
// reflects them all. A chunk without a version (never written since Redis started) is never
// shared: that absence says nothing of time. Versions start from a random seed, so one seen
// before Redis lost its keys never names a later state.
type sharedReads struct {
	mu      sync.Mutex
	flights map[string]*chunkRead // by docID + "@" + version
}

// chunkRead is one MongoDB read of a chunk under way; done closes when chunk and err are set.
type chunkRead struct {
	done  chan struct{}
	chunk *im.Chunk
	err   error
}

// find returns the chunks of docIDs, aligned with them, as store.FindChunks does; versions
// gives the version each was missed at ("" for none). It joins reads under way for the same
// chunk and version, and reads the rest in one query that others may join. A joined read that
// failed (its reader's context ended, say) is done again here rather than failing this reader.
func (s *sharedReads) find(ctx context.Context, store ChunkFinder, docIDs, versions []string) ([]*im.Chunk, error) {
	out := make([]*im.Chunk, len(docIDs))
	joined := map[int]*chunkRead{}
	led := map[int]*chunkRead{}
	var own []int
	s.mu.Lock()
	for i, id := range docIDs {
		if versions[i] == "" {
			own = append(own, i)
			continue
		}
		key := id + "@" + versions[i]
		if f, ok := s.flights[key]; ok {
			joined[i] = f
			continue
		}
		if s.flights == nil {
			s.flights = map[string]*chunkRead{}
		}
		f := &chunkRead{done: make(chan struct{})}
		s.flights[key] = f
		led[i] = f
		own = append(own, i)
	}
	s.mu.Unlock()

	if len(own) > 0 {
		ids := make([]string, len(own))
		for j, i := range own {
			ids[j] = docIDs[i]
		}
		found, err := store.FindChunks(ctx, ids)
		s.mu.Lock()
		for j, i := range own {
			f, ok := led[i]
			if !ok {
				continue
			}
			if err == nil {
				f.chunk = found[j]
			}
			f.err = err
			delete(s.flights, docIDs[i]+"@"+versions[i])
			close(f.done)
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for j, i := range own {
			out[i] = found[j]
		}
	}

	var retry []int
	for i, f := range joined {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, im.Unavailable("message store", context.Cause(ctx))
		}
		if f.err != nil {
			retry = append(retry, i)
			continue
		}
		out[i] = f.chunk
	}
	if len(retry) > 0 {
		ids := make([]string, len(retry))
		for j, i := range retry {
			ids[j] = docIDs[i]
		}
		found, err := store.FindChunks(ctx, ids)
		if err != nil {
			return nil, err
		}
		for j, i := range retry {
			out[i] = found[j]
		}
	}
	return out, nil
}
