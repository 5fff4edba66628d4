package cache

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// DefaultCoalescedReads is how many requests' state reads may wait on go-redis's
// autopipeliner at once (Options.CoalescedReads).
const DefaultCoalescedReads = 256

// coalescedReads sends the state reads of concurrent requests in shared round trips.
//
// Every page a client asks for reads seq and read states first (GetStatesMany,
// GetConversationListWithStates): a pipeline of two or three commands, whose cost on both ends
// is mostly the system calls of one round trip rather than the commands. Under load many
// requests make such a read at the same moment. A read made while more reads are under way
// than the process has CPUs goes on go-redis's deferred autopipeliner, which writes all the
// commands waiting when a round trip ends as one pipeline, in submission order; so one write
// and one read of the socket, on both ends, serve many requests. A read made with fewer under
// way takes a pipeline of its own as before: the CPUs are not all busy, and the
// autopipeliner's hand-offs between goroutines would only add to its latency (at 4 clients on
// 2 CPUs, sharing from the second read on cost up to a fifth of the list page's throughput).
//
// What stays the same: a request's commands run in the order it queued them (the
// autopipeliner keeps one ordered stream), a failed command fails that request's read with an
// error (never a miss), and admission (Options.Admission) admits or refuses each shared round
// trip as it does any pipeline. What differs: a shared round trip carries no request's context,
// so a request whose context ends stops waiting for it but cannot withdraw its commands, which
// are reads. Past the bound, reads take their own pipelines again, where admission decides on
// each with its request's deadline.
type coalescedReads struct {
	ap       *redis.AutoPipeliner // nil: off (a cluster client, or Options.CoalescedReads negative)
	busy     int32                // reads under way from which on reads share: GOMAXPROCS
	limit    int32
	inFlight atomic.Int32 // reads under way, shared or not
}

// newCoalescedReads starts the autopipeliner of a single-node client: its goroutine lives as
// long as the client (go-redis keeps one per client, and closing the client stops it), so it
// is started with the Cache rather than by the first overlapping reads.
func newCoalescedReads(rdb redis.UniversalClient, limit int) *coalescedReads {
	c, ok := rdb.(*redis.Client)
	if !ok || limit < 0 {
		return &coalescedReads{}
	}
	if limit == 0 {
		limit = DefaultCoalescedReads
	}
	limit = min(limit, 1<<20)
	ap, err := c.AsyncAutoPipelineWithOptions(&redis.AutoPipelineOptions{
		// One ordered stream (the default): a request's commands keep their order, and while
		// one round trip is out the next one's commands gather.
		MaxConcurrentBatches: 1,
		// A backstop: the count of reads under way keeps the queue far below it.
		MaxQueuedCommands: limit * 64,
	})
	if err != nil { // a closed client: reads take their own pipelines, which report why
		return &coalescedReads{}
	}
	return &coalescedReads{ap: ap, busy: int32(runtime.GOMAXPROCS(0)), limit: int32(limit)}
}

// commands collects the commands of one read before it is sent.
type commands []redis.Cmder

func (l *commands) Process(_ context.Context, cmd redis.Cmder) error {
	*l = append(*l, cmd)
	return nil
}

// do runs cmds in one round trip, shared with other requests' reads when the CPUs are busy,
// and returns the first error other than redis.Nil.
func (r *coalescedReads) do(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder) error {
	if len(cmds) == 0 {
		return nil
	}
	if r.ap != nil {
		n := r.inFlight.Add(1)
		defer r.inFlight.Add(-1)
		if n > r.busy && n <= r.limit {
			return shared(ctx, r.ap, cmds)
		}
	}
	pipe := rdb.Pipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd) // queued: Exec sends it and reports its error
	}
	_, err := pipe.Exec(ctx)
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func shared(ctx context.Context, ap *redis.AutoPipeliner, cmds []redis.Cmder) error {
	var buf [4]redis.AutoFuture
	futures := buf[:0]
	for _, cmd := range cmds {
		futures = append(futures, ap.Submit(ctx, cmd))
	}
	var first error
	for _, f := range futures {
		// WaitContext returns the command's own error once its round trip ran, or ctx's.
		if err := f.WaitContext(ctx); err != nil && !errors.Is(err, redis.Nil) && first == nil {
			first = err
			if ctx.Err() != nil {
				break // the rest would only report ctx's end again
			}
		}
	}
	return first
}

// SharedReads sends the reads of an adapter that reads another system's Redis itself
// (internal/openim reads an OpenIM deployment's) in shared round trips, as a Cache shares its
// own state reads (coalescedReads): a read's commands are sent after it was made, never
// answered from a round trip that left before, so sharing changes when a read is sent, not
// what it sees. It is safe for concurrent use.
type SharedReads struct {
	rdb   redis.UniversalClient
	reads *coalescedReads
}

// NewSharedReads returns the shared reads of rdb (from DialClient); limit bounds the reads
// that may share at once as Options.CoalescedReads does (0: DefaultCoalescedReads, negative:
// each read takes a pipeline of its own). On a cluster client every read takes its own.
func NewSharedReads(rdb redis.UniversalClient, limit int) *SharedReads {
	return &SharedReads{rdb: rdb, reads: newCoalescedReads(rdb, limit)}
}

// Do runs cmds in one round trip, shared with other reads when the CPUs are busy, and returns
// the first error other than redis.Nil; each command holds its own answer.
func (s *SharedReads) Do(ctx context.Context, cmds ...redis.Cmder) error {
	return s.reads.do(ctx, s.rdb, cmds)
}
