package ingest

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// RelayOptions configures a Relay. The zero value is usable.
type RelayOptions struct {
	// Interval is how often the outbox is looked at for intents past their Due. Default
	// DefaultRelayInterval, each wait drawn between half and one and a half of it, so instances do not look at once.
	Interval time.Duration
	// Batch bounds the intents taken per look; their chunks are read in one store read.
	// Default 50.
	Batch int
	// MaxMessages bounds the messages of the send intents taken per look (one intent is taken
	// however many it names). An import that failed leaves intents of 500 messages each (a
	// batch of up to 1,000 from other callers): fifty of them at once are more chunk reads and
	// seq raises than a look can finish in Retry, so the look would fail and come back, again
	// and again, on a store that also serves the gateway's readers. Default 500.
	MaxMessages int
	// Retry is how long an intent taken is left alone before it is tried again, by this
	// instance or another, when finishing it failed (Redis or the store down), doubling with
	// each try up to a minute; and how long one look may take. Default 5s.
	Retry time.Duration
	// Logger receives what was finished and what failed. Default slog.Default().
	Logger *slog.Logger
	// TracerProvider, when set (tracing on), spans each look (Run): its store and Redis
	// commands are the span's children. nil: no spans.
	TracerProvider trace.TracerProvider
	// OnLook, when set, is told what each look found and did: the gateway exports it as the
	// relay's backlog (ops.Metrics.WatchRelay).
	OnLook func(RelayLook)
}

// RelayLook is what one look of a Relay found and did.
type RelayLook struct {
	// Due is how many intents were past their Due (whatever their writer's state): left by a
	// writer that died or failed, or by one the store slows beyond its Due.
	Due int
	// OldestAge is how long ago the oldest due intent the look read was recorded: how long
	// its change has waited to be announced. It counts from Created, not Due, because every
	// failed try moves Due on. 0 when none is due.
	OldestAge time.Duration
	// Finished is how many intents the look finished.
	Finished int
	// Err is why the look failed, if it did.
	Err error
}

// DefaultRelayInterval is RelayOptions.Interval's default: an intent left behind is announced
// within about a second of its Due.
const DefaultRelayInterval = time.Second

// Relay finishes the changes whose writers left their intents behind (see
// imsync.Outbox.BeginIntent): every instance runs one, and an intent past its Due whose writer
// has stopped (its instance's own) or whose instance is dead is taken by the first that finds
// it. Finishing an intent twice announces nothing twice (events carry the change's key), so
// two instances taking one intent cost work, not correctness.
type Relay struct {
	in     *Ingester
	opts   RelayOptions
	tracer trace.Tracer // nil when tracing is off
}

// NewRelay returns a relay for the ingester's store.
func NewRelay(in *Ingester, opts RelayOptions) *Relay {
	if opts.Interval <= 0 {
		opts.Interval = DefaultRelayInterval
	}
	if opts.Batch <= 0 {
		opts.Batch = 50
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = 500
	}
	if opts.Retry <= 0 {
		opts.Retry = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Relay{in: in, opts: opts}
	if opts.TracerProvider != nil {
		r.tracer = opts.TracerProvider.Tracer("github.com/msggate/msggate/internal/ingest")
	}
	return r
}

// Run finishes due intents until ctx ends. It also says this instance is alive, so that other
// instances leave its writers' intents alone.
func (r *Relay) Run(ctx context.Context) {
	go r.in.outbox.Heartbeat(ctx)
	for {
		wait := r.opts.Interval/2 + rand.N(r.opts.Interval)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if _, err := r.step(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.WarnContext(ctx, "relay: finishing left intents failed; trying again", "err", err)
		}
	}
}

// step is one look of Run: RunOnce, in a span of its own when tracing is on.
func (r *Relay) step(ctx context.Context) (int, error) {
	if r.tracer == nil {
		return r.RunOnce(ctx)
	}
	ctx, span := r.tracer.Start(ctx, "outbox relay")
	defer span.End()
	n, err := r.RunOnce(ctx)
	span.SetAttributes(attribute.Int("msggate.relay.finished", n))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, im.ErrorCode(err))
	}
	return n, err
}

// RunOnce takes the intents due now and finishes each; it returns how many it finished.
func (r *Relay) RunOnce(ctx context.Context) (finished int, err error) {
	now := time.Now()
	due, err := r.in.store.DueIntents(ctx, now, r.opts.Batch)
	if r.opts.OnLook != nil {
		look := RelayLook{Due: len(due)}
		for _, it := range due {
			look.OldestAge = max(look.OldestAge, now.Sub(time.UnixMilli(it.Created)))
		}
		if err == nil && len(due) == r.opts.Batch {
			// More may wait than one look takes: count them, a command only a backlog costs.
			// A count that fails leaves the look's own figure, a lower bound.
			if n, cerr := r.in.store.CountDueIntents(ctx, now); cerr == nil {
				look.Due = n
			}
		}
		defer func() {
			look.Finished, look.Err = finished, err
			r.opts.OnLook(look)
		}()
	}
	if err != nil || len(due) == 0 {
		return 0, err
	}
	// A writer that is still at work, here or on a live instance, is left to finish, however
	// slow the store makes it: taking its work over would only add load to a busy store.
	if due, err = r.in.outbox.Orphaned(ctx, due); err != nil || len(due) == 0 {
		return 0, err
	}
	var claimed []chunkstore.Intent
	messages := 0
	for _, it := range due {
		if messages += len(it.Messages); messages > r.opts.MaxMessages && len(claimed) > 0 {
			break // left due, for the next look
		}
		// Each failed try doubles the wait before the next, up to a minute: an intent that
		// cannot be finished now (its store or Redis is down) costs little while it waits.
		ok, err := r.in.store.ClaimIntent(ctx, it, now.Add(min(r.opts.Retry<<min(it.Tries, 4), time.Minute)))
		if err != nil {
			return 0, err
		}
		if ok { // else another instance took it
			claimed = append(claimed, it)
		}
	}
	if len(claimed) == 0 {
		return 0, nil
	}
	tctx, cancel := context.WithTimeout(ctx, r.opts.Retry)
	defer cancel()
	chunks, err := r.in.intentChunks(tctx, claimed)
	if err != nil {
		return 0, err
	}
	finished = 0
	for _, it := range claimed {
		out, err := r.in.FinishIntent(tctx, chunks, it)
		if out == imsync.IntentDone {
			if err != nil {
				// An intent that can never be finished (one this version cannot read) must
				// not be tried for ever.
				r.opts.Logger.ErrorContext(ctx, "relay: dropping an intent that cannot be finished", "intent", it.ID, "kind", it.Kind, "err", err)
			}
			err = r.in.store.DropIntent(tctx, it.ID)
		}
		if err != nil && ctx.Err() != nil {
			return finished, ctx.Err() // the instance is closing
		}
		if err != nil {
			// Left for the next try, when the intent is due again.
			r.opts.Logger.WarnContext(ctx, "relay: an intent could not be finished yet", "intent", it.ID, "kind", it.Kind,
				"conversation", it.ConversationID, "tries", it.Tries+1, "err", err)
			continue
		}
		if out == imsync.IntentDone {
			finished++
			r.opts.Logger.InfoContext(ctx, "relay: finished a change its writer left", "intent", it.ID, "kind", it.Kind,
				"conversation", it.ConversationID, "age", now.Sub(time.UnixMilli(it.Created)).Round(time.Millisecond).String())
		}
	}
	return finished, nil
}
