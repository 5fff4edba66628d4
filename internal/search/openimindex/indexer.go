// Package openimindex keeps a search index current with an OpenIM deployment, read-only
// toward it: the follower (internal/openimsync) tells which seqs a batch of OpenIM's records or
// a gap fill touched; they are kept in a backlog in msggate's own Redis before the batch counts
// as applied (so the feed commits past a record only once its seqs are kept), and the Indexer
// reads each from OpenIM's stores and makes the index show the slot as it is now
// (ingest.SlotChange: the message, hidden for those who deleted it for themselves, or removed
// when revoked or deleted for everyone), then drops it from the backlog. Reading the slot
// rather than trusting the record makes every step idempotent and order-free: a record
// delivered twice, or a message's record after its revoke's, indexes what OpenIM shows. While
// the index is down the backlog grows and is indexed when it returns.
package openimindex

import (
	"context"
	"log/slog"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/search"
)

// Source is where the slots are read: an OpenIM deployment's MongoDB and message cache
// (*openim.Store).
type Source interface {
	Chunks(ctx context.Context, groups []im.SeqGroup) ([]*im.Chunk, error)
}

// Backlog keeps the seqs waiting to be indexed (*cache.Cache).
type Backlog interface {
	AddSearchBacklog(ctx context.Context, seqs []cache.BacklogSeq) error
	SearchBacklog(ctx context.Context, n int) ([]cache.BacklogSeq, error)
	DropSearchBacklog(ctx context.Context, seqs []cache.BacklogSeq) error
}

// Options configures an Indexer. The zero value is usable.
type Options struct {
	// Batch is how many seqs one pass reads and indexes. Default 500.
	Batch int
	// Interval is how often the backlog is looked at without being told of new seqs: what
	// another instance left, or a pass that failed. Default 1 s.
	Interval time.Duration
	// RetryMax bounds the wait after failed passes (doubling from 100 ms). Default 10 s.
	RetryMax time.Duration
	Logger   *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Indexer indexes what the follower touched. Touched may be called from any goroutine; Run
// indexes, in one goroutine per process, so that two passes of one process never race on a
// seq.
type Indexer struct {
	src     Source
	backlog Backlog
	engine  search.Engine
	opts    Options
	wake    chan struct{}
}

// New returns an Indexer of engine over src, its backlog in b.
func New(src Source, b Backlog, engine search.Engine, opts Options) *Indexer {
	return &Indexer{src: src, backlog: b, engine: engine, opts: opts.withDefaults(), wake: make(chan struct{}, 1)}
}

// Touched keeps keys in the backlog and wakes Run. Its error (Redis down) must fail the batch
// that touched them, so that the feed does not commit past it.
func (x *Indexer) Touched(ctx context.Context, keys []search.Key) error {
	seqs := make([]cache.BacklogSeq, 0, len(keys))
	for _, k := range keys {
		// A seq no store can hold would stand at the backlog's head for ever.
		if im.ValidateSeq(k.Seq) == nil {
			seqs = append(seqs, cache.BacklogSeq{ConversationID: k.ConversationID, Seq: k.Seq})
		}
	}
	if err := x.backlog.AddSearchBacklog(ctx, seqs); err != nil {
		return err
	}
	select {
	case x.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run indexes the backlog until ctx ends: at once when Touched wakes it, every Interval
// otherwise, and after a failed pass again with a backoff.
func (x *Indexer) Run(ctx context.Context) {
	t := time.NewTicker(x.opts.Interval)
	defer t.Stop()
	wait := time.Duration(0)
	for {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		err := x.Drain(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = min(max(2*wait, 100*time.Millisecond), x.opts.RetryMax)
			x.opts.Logger.Warn("search: the OpenIM backlog could not be indexed; trying again", "err", err, "retry_in", wait.String())
			continue
		}
		wait = 0
		select {
		case <-ctx.Done():
			return
		case <-x.wake:
		case <-t.C:
		}
	}
}

// Drain indexes the backlog until it is empty, and returns the first error (the index or a
// store down), leaving what it did not index in the backlog.
func (x *Indexer) Drain(ctx context.Context) error {
	for {
		seqs, err := x.backlog.SearchBacklog(ctx, x.opts.Batch)
		if err != nil || len(seqs) == 0 {
			return err
		}
		if err := x.index(ctx, seqs); err != nil {
			return err
		}
		if err := x.backlog.DropSearchBacklog(ctx, seqs); err != nil {
			return err
		}
		if len(seqs) < x.opts.Batch {
			// What was added since is either in the next pass or the next wake.
			return nil
		}
	}
}

// index makes the engine show what OpenIM's stores show of each seq now, and keeps it so
// against a revoke or delete indexed meanwhile by another gateway (search.Settle).
func (x *Indexer) index(ctx context.Context, seqs []cache.BacklogSeq) error {
	keys := make([]search.Key, len(seqs))
	for i, s := range seqs {
		keys[i] = search.Key{ConversationID: s.ConversationID, Seq: s.Seq}
	}
	changes, err := x.read(ctx, keys)
	if err != nil {
		return err
	}
	return search.Settle(ctx, x.engine, changes, x.read)
}

// read returns the changes that make the index show keys' slots as OpenIM's stores show them
// now, in keys' order.
func (x *Indexer) read(ctx context.Context, keys []search.Key) ([]search.Change, error) {
	byConv := map[string][]int64{}
	var convs []string
	for _, k := range keys {
		if _, ok := byConv[k.ConversationID]; !ok {
			convs = append(convs, k.ConversationID)
		}
		byConv[k.ConversationID] = append(byConv[k.ConversationID], k.Seq)
	}
	var groups []im.SeqGroup
	for _, c := range convs {
		groups = append(groups, im.GroupSeqsByDocID(c, byConv[c])...)
	}
	chunks, err := x.src.Chunks(ctx, groups)
	if err != nil {
		return nil, err
	}
	chunkOf := make(map[search.Key]*im.Chunk, len(keys))
	for i, g := range groups {
		conv, _, err := im.ParseDocID(g.DocID)
		if err != nil {
			return nil, err
		}
		for _, seq := range g.Seqs {
			chunkOf[search.Key{ConversationID: conv, Seq: seq}] = chunks[i]
		}
	}
	changes := make([]search.Change, len(keys))
	for i, k := range keys {
		changes[i] = ingest.SlotChange(k.ConversationID, k.Seq, chunkOf[k].Slot(k.Seq))
	}
	return changes, nil
}
