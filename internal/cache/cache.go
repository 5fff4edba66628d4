package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/internal/im"
)

// Defaults of Options that the gateway's flags show too.
const (
	// DefaultEventLogMaxLen is how many events each user's log keeps.
	DefaultEventLogMaxLen = 10000
	// DefaultEventLogMaxAge is how long an event is kept.
	DefaultEventLogMaxAge = 7 * 24 * time.Hour
)

// Options configures a Cache. The zero value is usable: every zero field takes its default.
type Options struct {
	// Prefix starts every key, so that several deployments (or tests) can share one Redis.
	// Default "msggate:".
	Prefix string
	// ChunkTTL is how long a cached chunk lives after it was filled. Default 24h.
	ChunkTTL time.Duration
	// StateTTL is how long seq and read state lives after its last write. Default 7 days.
	StateTTL time.Duration
	// AllocLockTTL bounds how long an instance may hold the allocator's refill lock. Default 5s.
	AllocLockTTL time.Duration
	// EventLogMaxLen bounds each user's event log; older events are dropped, and a token older
	// than the log answers "too long". Default DefaultEventLogMaxLen.
	EventLogMaxLen int64
	// EventLogMaxAge bounds how long an event is kept, and how long an idle log lives.
	// Default DefaultEventLogMaxAge.
	EventLogMaxAge time.Duration
	// ObserveCall, when set, is told how long each Redis round trip took (metrics).
	ObserveCall CallObserver
	// OnRoundTrip, when set, is told of each round trip before it is made (tests count them).
	OnRoundTrip RoundTripObserver
	// Admission, when set, lets each round trip through or refuses it (overload); nil lets
	// everything through.
	Admission Acquirer
	// CoalescedReads bounds how many requests' state reads may share round trips at once on
	// a single-node client (see coalescedReads); past it, each read takes its own. Default
	// DefaultCoalescedReads; negative: every read takes its own round trip.
	CoalescedReads int
	// TracerProvider, when set (tracing on), spans each command and each pipeline made in a
	// sampled trace (tracingHook), without the commands' arguments. nil installs nothing.
	TracerProvider trace.TracerProvider
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = "msggate:"
	}
	if o.ChunkTTL == 0 {
		o.ChunkTTL = 24 * time.Hour
	}
	if o.StateTTL == 0 {
		o.StateTTL = 7 * 24 * time.Hour
	}
	if o.EventLogMaxLen == 0 {
		o.EventLogMaxLen = DefaultEventLogMaxLen
	}
	if o.EventLogMaxAge == 0 {
		o.EventLogMaxAge = DefaultEventLogMaxAge
	}
	if o.AllocLockTTL == 0 {
		o.AllocLockTTL = 5 * time.Second
	}
	return o
}

// Cache is msggate's view of Redis. It is safe for concurrent use.
type Cache struct {
	rdb   redis.UniversalClient
	opts  Options
	reads *coalescedReads
	// ownsClient: the Cache dialled its client (Dial), so Close closes it.
	ownsClient bool
	// hold keeps the store's state from being served until Redis is known to describe the
	// store (store_identity.go).
	hold storeHold
}

// New returns a Cache over a go-redis client (single node or cluster). The observers of opts
// are added to the client as hooks; on a cluster client they see each call once, as the
// caller made it, before go-redis splits it by node.
func New(rdb redis.UniversalClient, opts Options) *Cache {
	c := &Cache{rdb: rdb, opts: opts.withDefaults()}
	rdb.AddHook(holdHook{c}) // first, so outermost: see holdHook
	addHooks(rdb, opts)
	c.reads = newCoalescedReads(rdb, opts.CoalescedReads)
	return c
}

// addHooks adds the observers of opts to rdb.
func addHooks(rdb redis.UniversalClient, opts Options) {
	if opts.TracerProvider != nil {
		// First, so that a span covers the wait for admission too.
		rdb.AddHook(newTracingHook(opts.TracerProvider, rdb))
	}
	if opts.OnRoundTrip != nil {
		rdb.AddHook(RoundTripHook(opts.OnRoundTrip))
	}
	if opts.ObserveCall != nil {
		rdb.AddHook(TimingHook(opts.ObserveCall))
	}
	if opts.Admission != nil {
		// Last, so that it runs innermost: a refused call was never made, and the observers
		// above see it fail at once (the timing hook counts it as a failure).
		rdb.AddHook(admissionHook{opts.Admission})
	}
}

// Ping checks that Redis answers: on a cluster, every master, since each holds a share of the
// conversations.
func (c *Cache) Ping(ctx context.Context) error {
	var err error
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	} else {
		err = c.rdb.Ping(ctx).Err()
	}
	if err != nil {
		return im.Unavailable("cache", err)
	}
	return nil
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// cacheError wraps a Redis failure. Callers on the read path treat it as a miss; callers on
// the write path report it.
func cacheError(op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return nil
	}
	return im.Unavailable("cache", errors.Join(errors.New("redis "+op), err))
}
