package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// Defaults of Options.
const (
	DefaultInterval              = time.Hour
	DefaultPageSize              = 500
	DefaultChunksPerConversation = 10
	DefaultProgressEvery         = 10000
)

// ErrDisabled is returned by RunOnce and Run when Options.MaxAge is not positive: retention
// is off unless an age is given.
var ErrDisabled = errors.New("retention: MaxAge is not set")

// Options configures a Job. The zero value means the defaults, except MaxAge, which must be
// set for the job to run.
type Options struct {
	// MaxAge is how old history may get: chunks whose every message was sent more than MaxAge
	// ago are deleted. Required (> 0).
	MaxAge time.Duration
	// Interval is the time between runs of Run. Default DefaultInterval.
	Interval time.Duration
	// PageSize is how many conversations one read of the seq collection returns. Default
	// DefaultPageSize, at most chunkstore.MaxConversationPage.
	PageSize int
	// ChunksPerConversation bounds one run's work per conversation: it scans at most this
	// many chunks from the min seq on, and looks this many back below it for chunks a stopped
	// run left behind. Default DefaultChunksPerConversation, at most
	// chunkstore.MaxChunkRange/2.
	ChunksPerConversation int
	// ProgressEvery is how many conversations pass between progress reports (log line and
	// Progress). Default DefaultProgressEvery.
	ProgressEvery int
	// Now is the clock; the cutoff is Now() - MaxAge, taken once per run. Default time.Now.
	Now func() time.Time
	// Logger receives progress, run summaries and cache failures. Default slog.Default().
	Logger *slog.Logger
	// Progress, when set, is called with the run's summary so far every ProgressEvery
	// conversations and once at the end of each run.
	Progress func(Summary)
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	o.PageSize = min(o.PageSize, chunkstore.MaxConversationPage)
	if o.ChunksPerConversation <= 0 {
		o.ChunksPerConversation = DefaultChunksPerConversation
	}
	o.ChunksPerConversation = min(o.ChunksPerConversation, chunkstore.MaxChunkRange/2)
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Summary is what one run did.
type Summary struct {
	// Cutoff is the run's cutoff: messages sent before it were old.
	Cutoff time.Time
	// Conversations is how many conversations were scanned.
	Conversations int
	// ChunksDeleted is how many chunk documents were deleted.
	ChunksDeleted int64
	// MinSeqsRaised is how many conversations' min seq moved.
	MinSeqsRaised int
	// Unfinished is how many conversations have old history left beyond this run's bound;
	// the next run continues there.
	Unfinished int
	// Skipped is how many seq documents name a conversation ID msggate does not serve (a
	// foreign store's): their history is left alone, and logged.
	Skipped int
}

func (s Summary) String() string {
	return fmt.Sprintf("retention before %s: %d conversations scanned, %d chunks deleted, %d min seqs raised, %d conversations to continue next run, %d skipped",
		s.Cutoff.UTC().Format(time.RFC3339), s.Conversations, s.ChunksDeleted, s.MinSeqsRaised, s.Unfinished, s.Skipped)
}

// Job deletes old history. It is safe for concurrent use, though one Run per process is
// enough.
type Job struct {
	store  *chunkstore.Store
	cache  *cache.Cache
	ledger MinSeqs
	opts   Options
}

// MinSeqs is what the job needs of the seq ledger (*imsync.Ledger): raising a conversation's
// min seq, which is announced to its members.
type MinSeqs interface {
	RaiseMinSeq(ctx context.Context, conversationID string, minSeq int64) error
}

// New returns a Job over the stores. Min seqs move only through the ledger, so that Redis and
// the members' devices learn of them.
func New(store *chunkstore.Store, c *cache.Cache, ledger MinSeqs, opts Options) *Job {
	return &Job{store: store, cache: c, ledger: ledger, opts: opts.withDefaults()}
}

// Run runs the job now and then every Interval until ctx ends. A failed run is logged and the
// next one tries again (a store that is down now may be back then). It returns ErrDisabled
// at once when MaxAge is not set, and nil when ctx ends.
func (j *Job) Run(ctx context.Context) error {
	if j.opts.MaxAge <= 0 {
		return ErrDisabled
	}
	log := j.opts.Logger
	for {
		sum, err := j.RunOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.ErrorContext(ctx, "retention run failed; retrying next interval", "err", err, "summary", sum.String(), "next_in", j.opts.Interval.String())
		default:
			log.InfoContext(ctx, "retention run done", "conversations", sum.Conversations, "chunks_deleted", sum.ChunksDeleted,
				"min_seqs_raised", sum.MinSeqsRaised, "unfinished", sum.Unfinished, "skipped", sum.Skipped, "cutoff", sum.Cutoff)
		}
		t := time.NewTimer(j.opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// RunOnce makes one pass over every conversation. It returns what it did so far together
// with the first storage error, which stops the pass: a store that fails is not to be read as
// a store with nothing to delete.
func (j *Job) RunOnce(ctx context.Context) (Summary, error) {
	if j.opts.MaxAge <= 0 {
		return Summary{}, ErrDisabled
	}
	sum := Summary{Cutoff: j.opts.Now().Add(-j.opts.MaxAge)}
	cutoff := sum.Cutoff.UnixMilli()
	after := ""
	for {
		page, err := j.store.ListConversationSeqs(ctx, after, j.opts.PageSize)
		if err != nil {
			return sum, fmt.Errorf("retention: list conversations after %q: %w", after, err)
		}
		for _, d := range page {
			if err := j.conversation(ctx, d, cutoff, &sum); err != nil {
				return sum, fmt.Errorf("retention: conversation %s: %w", d.ConversationID, err)
			}
			sum.Conversations++
			if sum.Conversations%j.opts.ProgressEvery == 0 {
				j.progress(ctx, sum)
			}
		}
		if len(page) < j.opts.PageSize {
			break
		}
		after = page[len(page)-1].ConversationID
	}
	if j.opts.Progress != nil {
		j.opts.Progress(sum)
	}
	return sum, nil
}

func (j *Job) progress(ctx context.Context, sum Summary) {
	j.opts.Logger.InfoContext(ctx, "retention in progress", "conversations", sum.Conversations,
		"chunks_deleted", sum.ChunksDeleted, "min_seqs_raised", sum.MinSeqsRaised)
	if j.opts.Progress != nil {
		j.opts.Progress(sum)
	}
}

// conversation applies one run to one conversation: read the window around the min seq (in
// two steps, the second only when the first found nothing newer than the cutoff), plan, then
// delete and raise in the order the package comment gives.
func (j *Job) conversation(ctx context.Context, d chunkstore.ConversationSeqs, cutoff int64, sum *Summary) error {
	if d.MaxSeq < 1 {
		return nil
	}
	if _, err := im.ParseConversationID(d.ConversationID); err != nil {
		// The ledger cannot announce a min seq for it, and no reader can name it; one such
		// document must not stop retention for every conversation after it.
		j.opts.Logger.WarnContext(ctx, "retention: skipping a conversation msggate does not serve", "conversation", d.ConversationID, "err", err)
		sum.Skipped++
		return nil
	}
	b := int64(j.opts.ChunksPerConversation)
	first := im.ChunkIndex(max(d.MinSeq, 1))
	last := im.ChunkIndex(d.MaxSeq)
	lo, hi := max(0, first-b), min(first+b-1, last)
	if hi < lo {
		return nil
	}
	// Most conversations stop at their first readable chunk: read only up to it first.
	chunks, err := j.store.FindChunkRange(ctx, d.ConversationID, lo, min(first, hi))
	if err != nil {
		return err
	}
	w := window{from: lo, chunks: chunks}
	p := planConversation(d, w, cutoff)
	if !p.finished && w.to() < hi {
		more, err := j.store.FindChunkRange(ctx, d.ConversationID, w.to()+1, hi)
		if err != nil {
			return err
		}
		w.chunks = append(w.chunks, more...)
		p = planConversation(d, w, cutoff)
	}
	if !p.finished {
		sum.Unfinished++
	}

	var deleted []string
	del := func(ids []string) error {
		n, err := j.store.DeleteChunks(ctx, ids)
		sum.ChunksDeleted += n
		deleted = append(deleted, ids...)
		return err
	}
	if p.minSeq > 0 && len(p.below) > 0 {
		if err := del(p.below); err != nil {
			return err
		}
		p.below = nil
	}
	if p.minSeq > 0 {
		if err := j.ledger.RaiseMinSeq(ctx, d.ConversationID, p.minSeq); err != nil {
			return err
		}
		sum.MinSeqsRaised++
	}
	if err := del(append(p.below, p.drop...)); err != nil {
		return err
	}
	if p.boundarySeq > 0 {
		ok, err := j.store.DeleteChunkIfEmptyAbove(ctx, d.ConversationID, p.boundarySeq)
		if err != nil {
			return err
		}
		if ok {
			sum.ChunksDeleted++
			deleted = append(deleted, im.DocID(d.ConversationID, p.boundarySeq))
		}
	}
	// A cached copy of a deleted chunk holds only seqs that are unreadable now, so a cache
	// failure here costs memory until the TTL, not correctness: log it, as the ledger does.
	if err := j.cache.InvalidateChunks(ctx, deleted); err != nil {
		j.opts.Logger.WarnContext(ctx, "retention: dropping cached chunks failed", "conversation", d.ConversationID, "err", err)
	}
	return nil
}
