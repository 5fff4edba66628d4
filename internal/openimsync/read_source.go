package openimsync

import (
	"context"
	"strconv"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
)

// ReadSource is an OpenIM deployment as the read path reads it while a Follower follows it:
// the Store, whose seq states also carry a chunks version, so that the read path may keep
// OpenIM's chunks in process (history.ChunkMemory) as it keeps msggate's own.
//
// The version is the one the Follower moves in msggate's Redis for every chunk a record (or
// the gap fill) reports changed, before the record's event is logged (cache.ChunksVersions),
// joined with the number of the clock's current period of MemoryPeriod: a copy is served only
// within the period it was read in, so that a change OpenIM makes with no record at all (a
// revoke whose record was lost) is not hidden by the process's copy for longer than the
// period, on top of what the Redis tier keeps. The version is read after OpenIM's seq state,
// so a chunk change whose record was applied before the state was read is never hidden behind
// a copy.
type ReadSource struct {
	*openim.Store
	cache *cache.Cache
	// period is MemoryPeriod in nanoseconds.
	period int64
}

// NewReadSource returns store's reads with chunks versions from c (the Follower's cache); a
// copy of a chunk is served for at most memoryPeriod after it was read (at least a millisecond).
func NewReadSource(store *openim.Store, c *cache.Cache, memoryPeriod time.Duration) *ReadSource {
	return &ReadSource{Store: store, cache: c, period: max(memoryPeriod, time.Millisecond).Nanoseconds()}
}

// States returns the Store's states, each with its chunks version. When msggate's Redis does
// not answer, the states go without one: their chunks are then read through, never served
// from a copy that may be stale.
func (r *ReadSource) States(ctx context.Context, userID string, conversationIDs []string) ([]im.SeqState, error) {
	states, err := r.Store.States(ctx, userID, conversationIDs)
	if err != nil {
		return nil, err
	}
	versions, err := r.cache.ChunksVersions(ctx, conversationIDs)
	if err != nil {
		return states, nil
	}
	period := "/" + strconv.FormatInt(time.Now().UnixNano()/r.period, 10)
	for i := range states {
		if versions[i] != "" {
			states[i].ChunksVersion = versions[i] + period
		}
	}
	return states, nil
}
