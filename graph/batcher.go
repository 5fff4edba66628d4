package graph

import (
	"context"
	"sync"
	"time"

	"github.com/msggate/msggate/internal/im"
)

// batcher gathers the keys one request's resolvers ask for and loads them in one call of
// fetch. gqlgen resolves sibling fields on goroutines of their own, so the first key of a batch
// cannot know how many siblings will follow: the batch stays open while keys keep arriving,
// and goes once none has arrived for LoaderOptions.Quiet, or at LoaderOptions.Wait after its
// first key at the latest, or when it holds MaxBatch keys. A level of a query with a single
// caller (one conversation's history) thus waits a fraction of a millisecond, not the whole
// Wait. Answers are kept for the request: a key is fetched once however often it is asked.
type batcher[K comparable, V any] struct {
	name  string
	opts  LoaderOptions
	fetch func(context.Context, []K) ([]V, error)

	mu   sync.Mutex
	memo map[K]*loadCall[V]
	open *pendingBatch[K, V]
}

// loadCall is one key's answer, ready when done is closed.
type loadCall[V any] struct {
	done chan struct{}
	val  V
	err  error
}

type pendingBatch[K comparable, V any] struct {
	keys        []K
	calls       []*loadCall[V]
	lastArrival time.Time
	dispatched  bool
}

func newBatcher[K comparable, V any](o LoaderOptions, name string, fetch func(context.Context, []K) ([]V, error)) *batcher[K, V] {
	return &batcher[K, V]{name: name, opts: o, fetch: fetch, memo: map[K]*loadCall[V]{}}
}

// Load returns key's answer.
func (b *batcher[K, V]) Load(ctx context.Context, key K) (V, error) {
	return b.enqueue(ctx, []K{key})[0].wait(ctx)
}

// LoadMany returns the answers of keys, aligned with them; the first error fails them all.
func (b *batcher[K, V]) LoadMany(ctx context.Context, keys []K) ([]V, error) {
	calls := b.enqueue(ctx, keys)
	out := make([]V, len(keys))
	for i, c := range calls {
		v, err := c.wait(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Prime records key's answer, known from elsewhere, unless it was asked for already.
func (b *batcher[K, V]) Prime(key K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.memo[key]; !ok {
		b.memo[key] = answered(v)
	}
}

// Replace records key's answer in place of any earlier one: what a mutation just wrote is
// newer than what the request read before it.
func (b *batcher[K, V]) Replace(key K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.memo[key] = answered(v)
}

func answered[V any](v V) *loadCall[V] {
	c := &loadCall[V]{done: make(chan struct{}), val: v}
	close(c.done)
	return c
}

// enqueue adds the keys not asked for before to the open batch (opening one, or more past
// MaxBatch) and returns every key's call.
func (b *batcher[K, V]) enqueue(ctx context.Context, keys []K) []*loadCall[V] {
	calls := make([]*loadCall[V], len(keys))
	var opened, full []*pendingBatch[K, V]
	now := time.Now()
	b.mu.Lock()
	for i, k := range keys {
		if c, ok := b.memo[k]; ok {
			calls[i] = c
			continue
		}
		c := &loadCall[V]{done: make(chan struct{})}
		b.memo[k], calls[i] = c, c
		if b.open == nil {
			b.open = &pendingBatch[K, V]{}
			opened = append(opened, b.open)
		}
		p := b.open
		p.keys, p.calls, p.lastArrival = append(p.keys, k), append(p.calls, c), now
		if len(p.keys) >= b.opts.MaxBatch {
			p.dispatched, b.open = true, nil
			full = append(full, p)
		}
	}
	b.mu.Unlock()
	for _, p := range full {
		go b.run(ctx, p)
	}
	for _, p := range opened {
		go b.dispatchWhenQuiet(ctx, p)
	}
	return calls
}

// dispatchWhenQuiet runs p once no key has joined it for Quiet, or Wait after it opened.
func (b *batcher[K, V]) dispatchWhenQuiet(ctx context.Context, p *pendingBatch[K, V]) {
	deadline := time.Now().Add(b.opts.Wait)
	for {
		b.mu.Lock()
		if p.dispatched { // it filled up and went
			b.mu.Unlock()
			return
		}
		now := time.Now()
		next := p.lastArrival.Add(b.opts.Quiet)
		if next.After(deadline) {
			next = deadline
		}
		if !now.Before(next) {
			p.dispatched = true
			if b.open == p {
				b.open = nil
			}
			b.mu.Unlock()
			b.run(ctx, p)
			return
		}
		b.mu.Unlock()
		time.Sleep(next.Sub(now))
	}
}

// run fetches p's keys and answers each call: one error fails every key of the batch, as a
// store failure must never read as "no data".
func (b *batcher[K, V]) run(ctx context.Context, p *pendingBatch[K, V]) {
	if b.opts.ObserveBatch != nil {
		b.opts.ObserveBatch(b.name, len(p.keys))
	}
	vals, err := b.fetchSafely(ctx, p.keys)
	if err == nil && len(vals) != len(p.keys) {
		err = im.Errorf(im.EINTERNAL, "batch answered %d of %d keys", len(vals), len(p.keys))
	}
	for i, c := range p.calls {
		if err != nil {
			c.err = err
		} else {
			c.val = vals[i]
		}
		close(c.done)
	}
}

// fetchSafely calls fetch; a panic there (a bug) fails the batch instead of the process, as
// gqlgen turns a resolver's panic into an error.
func (b *batcher[K, V]) fetchSafely(ctx context.Context, keys []K) (vals []V, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, im.Errorf(im.EINTERNAL, "%s loader: %v", b.name, r)
		}
	}()
	return b.fetch(ctx, keys)
}

// wait returns the call's answer, or ctx's error if the request ends first.
func (c *loadCall[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
