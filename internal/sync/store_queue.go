package sync

import (
	"context"
	gosync "sync"
	"time"
)

// storeQueue reads keys from the store in batches, one batch query at a time: the keys asked
// for while a query runs wait for the next one, which takes all of them (up to max). A
// loader whose batches fill within a fixed wait sends a query for each few keys when the
// callers arrive spread out, as the devices of a reconnect storm do, and on FerretDB a query
// by a field other than _id scans the collection: the queries' cost would grow with the
// users times the collection. Here the number of queries follows how long a query takes,
// not how many callers ask. A key asked for twice before its query starts is read once.
//
// A caller's key is never added to a query already running: every answer was read after it
// was asked for, as a query of the caller's own would have been.
type storeQueue[K comparable, V any] struct {
	read func(ctx context.Context, keys []K) (map[K]V, error)
	max  int
	wait time.Duration

	mu      gosync.Mutex
	pending map[K]*queuedKey[V]
	order   []K
	ctx     context.Context // the first waiting caller's, without its cancellation
	running bool
}

type queuedKey[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// newStoreQueue returns a queue whose first query, after a time without one, waits wait
// for more callers to share it.
func newStoreQueue[K comparable, V any](read func(ctx context.Context, keys []K) (map[K]V, error), wait time.Duration) *storeQueue[K, V] {
	return &storeQueue[K, V]{read: read, max: storeBatch, wait: wait, pending: map[K]*queuedKey[V]{}}
}

// load returns the values of keys (a key without one gets V's zero value).
func (q *storeQueue[K, V]) load(ctx context.Context, keys []K) (map[K]V, error) {
	if len(keys) == 0 {
		return map[K]V{}, nil
	}
	waits := make(map[K]*queuedKey[V], len(keys))
	q.mu.Lock()
	for _, k := range keys {
		e, ok := q.pending[k]
		if !ok {
			e = &queuedKey[V]{done: make(chan struct{})}
			q.pending[k] = e
			q.order = append(q.order, k)
		}
		waits[k] = e
	}
	if q.ctx == nil {
		q.ctx = context.WithoutCancel(ctx)
	}
	if !q.running {
		q.running = true
		go q.run()
	}
	q.mu.Unlock()
	out := make(map[K]V, len(keys))
	for k, e := range waits {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		out[k] = e.val
	}
	return out, nil
}

// run sends the queries while keys wait, the first after q.wait so that a burst's first
// callers share it.
func (q *storeQueue[K, V]) run() {
	if q.wait > 0 {
		time.Sleep(q.wait)
	}
	for {
		q.mu.Lock()
		n := min(len(q.order), q.max)
		if n == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		keys := q.order[:n:n]
		q.order = q.order[n:]
		batch := make([]*queuedKey[V], n)
		for i, k := range keys {
			batch[i] = q.pending[k]
			delete(q.pending, k)
		}
		ctx := q.ctx
		if len(q.order) == 0 {
			q.ctx = nil
		}
		q.mu.Unlock()
		ctx, cancel := context.WithTimeout(ctx, storeBatchTimeout)
		vals, err := q.read(ctx, keys)
		cancel()
		for i, k := range keys {
			batch[i].val, batch[i].err = vals[k], err
			close(batch[i].done)
		}
	}
}
