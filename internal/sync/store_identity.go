package sync

import (
	"context"
	"errors"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
)

// IdentityOptions configures an IdentityWatch. The zero value is usable.
type IdentityOptions struct {
	// Interval is how often the store's identity is moved on and checked against Redis's
	// record. Default DefaultIdentityInterval.
	Interval time.Duration
	// Logger receives the discards and the failed checks. Default slog.Default().
	Logger *slog.Logger
}

// DefaultIdentityInterval is IdentityOptions.Interval's default.
const DefaultIdentityInterval = time.Second

// identityRetry is how soon a check that failed, or found another instance discarding, is
// made again.
const identityRetry = 200 * time.Millisecond

// IdentityWatch ties Redis's state to the store it describes (chunkstore.StoreIdentity): it
// moves the store's identity clock on every Interval and records the new value in Redis, and
// when Redis's record is of another store, or ahead of the store (a restore), it discards
// msggate's state in Redis, which is then rebuilt from the store on demand. Until its first
// check passes, and while it discards, the cache holds the store's state back
// (cache.Cache.HoldStoreState): readers go to MongoDB, writers answer UNAVAILABLE.
type IdentityWatch struct {
	store *chunkstore.Store
	cache *cache.Cache
	opts  IdentityOptions

	// mu serialises checks: Run makes one every Interval, and a caller that needs Redis to
	// describe the store now (a test after a restore) may make one at the same time.
	mu gosync.Mutex
	// seen is Redis's record as the last check left it; valid is false when it must be read
	// again (at start, after a failure or a discard by another instance).
	seen  cache.StoreIdentity
	valid bool
	// serving: the last check found that Redis describes the store, and the hold is off.
	serving bool
	// warned: the mismatch being discarded was logged (once, however long another instance
	// takes to discard it).
	warned bool

	confirmed chan struct{}
	once      gosync.Once
}

// NewIdentityWatch returns a watch over the store and the cache, and holds the cache's store
// state until its first check passes (Run).
func NewIdentityWatch(store *chunkstore.Store, c *cache.Cache, opts IdentityOptions) *IdentityWatch {
	if opts.Interval <= 0 {
		opts.Interval = DefaultIdentityInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c.HoldStoreState(false)
	return &IdentityWatch{store: store, cache: c, opts: opts, confirmed: make(chan struct{})}
}

// Confirmed is closed once a check has found that Redis describes the store (after a
// discard, if one was needed).
func (w *IdentityWatch) Confirmed() <-chan struct{} { return w.confirmed }

// Run checks until ctx ends.
func (w *IdentityWatch) Run(ctx context.Context) {
	// While the store is being prepared, the store's state waits for the first check; once
	// an attempt to prepare it has failed (the store is down) it is refused at once, as the
	// store's own operations are.
	for refused := false; ; {
		select {
		case <-w.store.Ready():
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
			if !refused && w.store.StartFailed() {
				refused = true
				w.cache.HoldStoreState(true)
			}
			continue
		}
		if refused {
			w.cache.HoldStoreState(false) // the check is a moment away: wait for it
		}
		break
	}
	for {
		wait := w.opts.Interval
		if err := w.Check(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, errDiscardElsewhere) {
				w.opts.Logger.WarnContext(ctx, "checking that Redis describes this store failed; retrying", "err", err)
			}
			if !w.isServing() {
				// Not known yet: refuse at once rather than make requests wait for a check
				// that failed. Once known, a failed check (the store is down for a moment)
				// changes nothing Redis serves.
				w.cache.HoldStoreState(true)
			}
			wait = min(wait, identityRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (w *IdentityWatch) isServing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.serving
}

// errDiscardElsewhere: another instance is discarding Redis's state; this one waits for it.
var errDiscardElsewhere = errors.New("another instance is discarding the state of another store")

// checkTimeout bounds the store and Redis calls of one check; a discard runs as long as it
// takes.
const checkTimeout = 10 * time.Second

// Check moves the store's identity on and records it in Redis, after making sure that Redis
// describes the store: when its record is another store's or ahead of the store's, it holds
// the cache's store state, discards it and records the store's identity. It ends the hold
// once Redis describes the store. Run calls it every Interval; a concurrent call waits for
// the check under way.
func (w *IdentityWatch) Check(ctx context.Context) (err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			w.valid = false
		}
	}()
	if !w.valid {
		if w.seen, err = w.cache.RecordStoreIdentity(cctx, cache.StoreIdentity{}); err != nil {
			return err
		}
	}
	id, ok, err := w.store.AdvanceIdentity(cctx, chunkstore.StoreIdentity(w.seen))
	if err != nil {
		return err
	}
	if !ok {
		if err := w.discard(ctx, id); err != nil {
			return err
		}
	} else if w.seen, err = w.cache.RecordStoreIdentity(cctx, cache.StoreIdentity(id)); err != nil {
		return err
	}
	w.valid, w.serving, w.warned = true, true, false
	w.cache.ServeStoreState()
	w.once.Do(func() { close(w.confirmed) })
	return nil
}

// discard replaces Redis's state of another store (or of this store ahead of it) with the
// store's identity; store is the identity the store holds.
func (w *IdentityWatch) discard(ctx context.Context, store chunkstore.StoreIdentity) error {
	w.serving = false
	w.cache.HoldStoreState(true)
	if !w.warned {
		w.warned = true
		w.opts.Logger.WarnContext(ctx, "Redis describes another store, or this store as it was later (restored from a backup): "+
			"discarding msggate's state in Redis; devices resync", "redis_token", w.seen.Token, "redis_clock", w.seen.Clock,
			"store_token", store.Token, "store_clock", store.Clock)
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	// A step of the store's own, recorded only once the discard is done: no other instance
	// can have recorded it, so theirs cannot be taken for it.
	id, _, err := w.store.AdvanceIdentity(cctx, chunkstore.StoreIdentity{})
	if err != nil {
		return err
	}
	// Not bounded by the check's timeout: the discard renews its lock batch by batch, and a
	// Redis with many keys takes longer than one check may. One cut short (the gateway
	// closes) has not recorded the identity, so the next start discards again.
	done, deleted, err := w.cache.DiscardStoreState(ctx, cache.StoreIdentity(id))
	if err != nil {
		return err
	}
	if !done {
		return errDiscardElsewhere
	}
	w.opts.Logger.WarnContext(ctx, "discarded msggate's state of another store in Redis; it is rebuilt from the store as it is used",
		"keys", deleted, "store_token", id.Token, "store_clock", id.Clock)
	w.seen = cache.StoreIdentity(id)
	return nil
}
