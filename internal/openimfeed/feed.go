package openimfeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const (
	// maxBatch bounds one apply call; OpenIM's own msgtransfer batches 500 records.
	maxBatch = 500
	// An apply that fails is retried after retryFirst, doubling up to retryMax: the store it
	// writes to is usually back within seconds, and a longer wait only delays every later record.
	retryFirst = 100 * time.Millisecond
	retryMax   = 10 * time.Second
	// commitTimeout bounds the commit of an applied batch, which runs even when Run's ctx has
	// just ended: the work is done, and committing it spares the next consumer applying it again.
	commitTimeout = 10 * time.Second
)

// ErrRunTwice is returned by a second call of Run: the first one's client has moved past any
// batch it did not commit, so a second Run on the same Feed could skip it. Open a new Feed.
var ErrRunTwice = errors.New("openimfeed: Run called twice on one Feed")

// ErrRefused is what apply wraps when the changes hold one it will never apply, whatever the
// number of tries: the change itself is invalid (an ID the store's rules refuse), not the store
// unreachable. Run then finds that change, skips its record (Options.OnSkip) and goes on. Any
// other error is an outage: the same batch is tried again and nothing is committed.
var ErrRefused = errors.New("openimfeed: change refused")

// Why a record was skipped (Skipped.Reason).
const (
	ReasonUndecodable = "undecodable" // not a PushMsgDataToMQ, or a tip without what it names
	ReasonRefused     = "refused"     // apply refused its change (ErrRefused)
)

// Skipped is a record Run moved past without applying it.
type Skipped struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte // the record as OpenIM wrote it
	Reason    string // ReasonUndecodable or ReasonRefused
	Err       error  // why
}

// Feed consumes toPush in msggate's consumer group.
type Feed struct {
	opts    Options
	client  *kgo.Client
	log     *slog.Logger
	started atomic.Bool

	lagMu sync.Mutex
	lag   map[int32]partitionLag // by partition, of those this member was given records of
}

// partitionLag is where one partition stood at the last poll that returned it.
type partitionLag struct {
	end     int64 // the partition's high watermark: the offset its next record will have
	applied int64 // the offset after the last record applied, or the first one polled
}

// Open checks opts and makes the Kafka client. It does not wait for a broker: connection and
// authentication errors come out of Run.
func Open(opts Options) (*Feed, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	client, err := kgo.NewClient(opts.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("openimfeed: %w", err)
	}
	return &Feed{
		opts:   opts,
		client: client,
		log:    opts.Logger.With("topic", opts.Topic, "group", opts.Group),
	}, nil
}

// Close leaves the consumer group and closes the client. Offsets of a batch whose apply has
// not returned nil are not committed: the group's next member receives that batch again.
// End Run's ctx and let Run return first: leaving the group is a rebalance, and rebalances
// wait for the batch Run holds. A Run waiting for records returns kgo.ErrClientClosed.
func (f *Feed) Close() { f.client.Close() }

// Run consumes until ctx ends: it polls, decodes each record into Changes, calls apply with a
// batch (in partition order), and commits the batch's offsets only after apply returned nil.
// When apply fails it waits (backoff) and retries the same batch, committing nothing, unless
// the error wraps ErrRefused: then it applies the batch's changes one by one to find those
// apply refuses, and skips their records. A record that cannot be decoded, or whose change
// apply refuses, is logged and handed to Options.OnSkip, then committed with the rest; while
// OnSkip fails, nothing is committed and it is tried again. Returns ctx's error or a fatal
// client error: the broker refusing msggate's credentials when Run starts, an authorization
// refusal reported by a poll, or the client closed. An unreachable broker is not fatal: the
// client retries it for as long as ctx lasts. Run may be called once per Feed.
func (f *Feed) Run(ctx context.Context, apply func(ctx context.Context, changes []Change) error) error {
	if f.started.Swap(true) {
		return ErrRunTwice
	}
	// The consumer's own requests retry every failure, a refused password included, without
	// ever reporting it to a poll; one request up front turns a refusal into Run's error.
	if err := f.client.Ping(ctx); err != nil {
		if isFatal(err) {
			return fmt.Errorf("openimfeed: %w", err)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		f.log.Warn("no Kafka broker answers yet; the client keeps trying", "brokers", f.opts.Brokers, "err", err)
	}
	for {
		fetches := f.client.PollRecords(ctx, maxBatch)
		err := f.consumeTraced(ctx, fetches, apply)
		// Rebalances wait while a polled batch is uncommitted (BlockRebalanceOnPoll).
		f.client.AllowRebalance()
		if err != nil {
			return err
		}
	}
}

// consumeTraced is consume in a span of its own when tracing is on and the poll brought
// records. The span starts when they arrived: the wait for them is idle time, not work.
func (f *Feed) consumeTraced(ctx context.Context, fetches kgo.Fetches, apply func(context.Context, []Change) error) error {
	n := fetches.NumRecords()
	if f.opts.TracerProvider == nil || n == 0 {
		return f.consume(ctx, fetches, apply)
	}
	ctx, span := f.opts.TracerProvider.Tracer("github.com/msggate/msggate/internal/openimfeed").Start(ctx,
		"poll "+f.opts.Topic, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.operation.type", "receive"),
			attribute.String("messaging.destination.name", f.opts.Topic),
			attribute.String("messaging.consumer.group.name", f.opts.Group),
			attribute.Int("messaging.batch.message_count", n)))
	defer span.End()
	err := f.consume(ctx, fetches, apply)
	if err != nil && ctx.Err() == nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "poll failed")
	}
	return err
}

// consume applies and commits one poll's records.
func (f *Feed) consume(ctx context.Context, fetches kgo.Fetches, apply func(context.Context, []Change) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fetches.IsClientClosed() {
		return kgo.ErrClientClosed
	}
	for _, fe := range fetches.Errors() {
		if isFatal(fe.Err) {
			return fmt.Errorf("openimfeed: %w", fe.Err)
		}
		f.log.Warn("kafka fetch error; the client retries", "partition", fe.Partition, "err", fe.Err)
	}
	records := fetches.Records()
	if len(records) == 0 {
		return nil
	}
	f.notePolled(fetches)
	changes := make([]Change, 0, len(records))
	for _, r := range records {
		c, err := decodeChange(r)
		if err != nil {
			// One bad record must not stop the feed for everyone behind it; OpenIM's own
			// consumers skip such records the same way (push_handler.go handleMs2PsChat).
			if err := f.skip(ctx, r, ReasonUndecodable, err); err != nil {
				return err
			}
			continue
		}
		changes = append(changes, c)
	}
	if len(changes) > 0 {
		if err := f.applyUntilDone(ctx, apply, changes, records); err != nil {
			return err
		}
	}
	f.noteApplied(records)
	commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := f.client.CommitRecords(commitCtx, records...); err != nil {
		// The batch is applied; without the commit it is applied again after a restart or a
		// rebalance (apply is idempotent), so this is worth a log line, not stopping.
		f.log.Warn("commit failed; the batch will be delivered again after a restart",
			"records", len(records), "err", err)
	}
	return ctx.Err()
}

// Lag is how many records of the topic msggate has not applied yet, summed over the
// partitions this member was given records of: each partition's high watermark at its last
// poll, less the offset after the last record applied (the records of a batch being applied
// count as not applied). It is the lag as of the last poll that returned records, so a
// stuck apply shows at least its batch, and records arriving meanwhile show at the next poll.
func (f *Feed) Lag() int64 {
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	var n int64
	for _, p := range f.lag {
		n += max(0, p.end-p.applied)
	}
	return n
}

// notePolled records the high watermarks of a poll's partitions; a partition polled for the
// first time counts as applied up to its first record.
func (f *Feed) notePolled(fetches kgo.Fetches) {
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	if f.lag == nil {
		f.lag = map[int32]partitionLag{}
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		l, ok := f.lag[p.Partition]
		if !ok {
			l.applied = p.Records[0].Offset
		}
		l.end = max(l.end, p.HighWatermark)
		f.lag[p.Partition] = l
	})
}

// noteApplied records that records are applied (or skipped): each partition's next record is
// past the last of them.
func (f *Feed) noteApplied(records []*kgo.Record) {
	f.lagMu.Lock()
	defer f.lagMu.Unlock()
	for _, r := range records {
		if l := f.lag[r.Partition]; r.Offset+1 > l.applied {
			l.applied = r.Offset + 1
			l.end = max(l.end, l.applied)
			f.lag[r.Partition] = l
		}
	}
}

// applyUntilDone calls apply until it returns nil or ctx ends. A batch apply refuses is
// applied one change at a time, and a single change it refuses has its record skipped.
func (f *Feed) applyUntilDone(ctx context.Context, apply func(context.Context, []Change) error, changes []Change, records []*kgo.Record) error {
	wait := retryFirst
	for attempt := 1; ; attempt++ {
		err := apply(ctx, changes)
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, ErrRefused) {
			if len(changes) == 1 {
				return f.skip(ctx, recordOf(records, changes[0]), ReasonRefused, err)
			}
			for i := range changes {
				if err := f.applyUntilDone(ctx, apply, changes[i:i+1], records); err != nil {
					return err
				}
			}
			return nil
		}
		first := changes[0]
		f.log.Warn("applying toPush changes failed; retrying the same batch",
			"attempt", attempt, "changes", len(changes), "partition", first.Partition,
			"offset", first.Offset, "retryIn", wait, "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, retryMax)
	}
}

// skip logs a record Run moves past and hands it to OnSkip, until OnSkip keeps it or ctx ends:
// a record is committed only once it can be found again.
func (f *Feed) skip(ctx context.Context, r *kgo.Record, reason string, cause error) error {
	f.log.Error("skipping a toPush record", "reason", reason, "partition", r.Partition,
		"offset", r.Offset, "key", string(r.Key), "err", cause)
	if f.opts.OnSkip == nil {
		return nil
	}
	s := Skipped{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
		Reason: reason, Err: cause}
	wait := retryFirst
	for {
		err := f.opts.OnSkip(ctx, s)
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		f.log.Warn("keeping a skipped toPush record failed; nothing is committed until it is kept",
			"partition", r.Partition, "offset", r.Offset, "retryIn", wait, "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, retryMax)
	}
}

// recordOf returns the record a change was decoded from.
func recordOf(records []*kgo.Record, c Change) *kgo.Record {
	for _, r := range records {
		if r.Partition == c.Partition && r.Offset == c.Offset {
			return r
		}
	}
	// Unreachable: every change comes from one of the poll's records.
	return &kgo.Record{Partition: c.Partition, Offset: c.Offset}
}

// sleep waits d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// isFatal says whether a fetch error will not go away by retrying: the broker refuses
// msggate's credentials or rights, or the client is closed.
func isFatal(err error) bool {
	for _, fatal := range []error{
		kgo.ErrClientClosed,
		kerr.SaslAuthenticationFailed,
		kerr.UnsupportedSaslMechanism,
		kerr.IllegalSaslState,
		kerr.TopicAuthorizationFailed,
		kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed,
	} {
		if errors.Is(err, fatal) {
			return true
		}
	}
	return false
}
