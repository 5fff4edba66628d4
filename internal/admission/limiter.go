package admission

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxInFlight is how many operations a Limiter lets through to its dependency at
	// once. A store on two cores gains nothing from more commands at once than it can run;
	// beyond a few dozen they only wait inside it, where no one can see or refuse them.
	DefaultMaxInFlight = 32
	// DefaultMaxQueue is how many operations may wait for a slot.
	DefaultMaxQueue = 512
	// DefaultMaxWait is the longest an operation waits for a slot. A client told to come back
	// later loses less than one whose request sits in a queue for most of its time limit, and
	// a queue that takes longer than this to drain is not a burst but an overload.
	DefaultMaxWait = 2 * time.Second
	// MinRetryAfter and MaxRetryAfter bound the retry hint of a refusal.
	MinRetryAfter = 100 * time.Millisecond
	MaxRetryAfter = 30 * time.Second
)

// ErrOverloaded is what every refusal is (errors.Is): the dependency has more work queued
// than it can finish in time.
var ErrOverloaded = errors.New("overloaded")

// RefusedError is a refusal: the operation was not let through, and nothing was done.
type RefusedError struct {
	// Name is the Limiter's (Options.Name).
	Name string
	// Reason says which rule refused it, for logs.
	Reason string
	// RetryAfter is when the queue is expected to have drained enough to take the operation.
	RetryAfter time.Duration
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is overloaded (%s); retry after %v", e.Name, e.Reason, e.RetryAfter)
}

// Is makes every refusal match ErrOverloaded.
func (e *RefusedError) Is(target error) bool { return target == ErrOverloaded }

// RetryHint is the refusal's retry hint; callers find it through errors.As with an interface,
// so they need not know this type.
func (e *RefusedError) RetryHint() time.Duration { return e.RetryAfter }

// Options configures a Limiter. The zero value is usable: every zero field takes its default.
type Options struct {
	// Name names the dependency in errors ("message store", "cache").
	Name string
	// MaxInFlight bounds the operations let through at once. Default DefaultMaxInFlight;
	// negative: no limit (the Limiter lets everything through and only measures).
	MaxInFlight int
	// MaxQueue bounds the operations waiting for a slot; one more is refused. Default
	// DefaultMaxQueue.
	MaxQueue int
	// MaxWait bounds how long an operation waits for a slot: one expected to wait longer is
	// refused at once, and one still waiting after it is refused then. Default DefaultMaxWait.
	MaxWait time.Duration
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "dependency"
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultMaxWait
	}
	return o
}

// Limiter bounds the operations one process sends to one dependency: at most MaxInFlight at
// once, the rest wait in order. It refuses an operation at once, rather than letting it wait
// out its context's deadline, when the wait it can expect is longer than what is left of that
// deadline (less the operation's own time) or than MaxWait.
//
// The expected wait of the k-th operation in the queue (0 first) is (k+1) × S / MaxInFlight,
// where S is the mean time an operation holds a slot: the slots turn over MaxInFlight times per
// S. S is an exponentially weighted mean of the recent operations' times, or, when larger,
// the age of the oldest operation still running: a dependency that stopped answering
// completes nothing, so its mean would never move, while the age of what is stuck grows.
//
// A dependency where every slot is taken and none has come free for longer than MaxWait has
// stopped answering: operations are then refused at once.
//
// An operation whose context has no deadline (work that must finish once begun, such as the
// steps after a message is stored) is never refused: it waits for its turn.
//
// Nested operations (a store call that makes another) hold one slot: Acquire marks the context
// it returns, and an Acquire with such a context lets it through at once.
type Limiter struct {
	o Options

	mu       sync.Mutex
	inFlight list.List     // time.Time each running operation started, oldest first
	queue    list.List     // *waiter, first come first
	mean     time.Duration // of the operations' times; 0 until the first one ends
	lastDone time.Time     // when an operation last ended (or the Limiter was made)

	admitted, refused atomic.Int64
}

type waiter struct {
	granted chan *list.Element // receives the slot (its inFlight element)
}

// New returns a Limiter.
func New(o Options) *Limiter {
	return &Limiter{o: o.withDefaults(), lastDone: time.Now()}
}

type heldKey struct{ l *Limiter }

type committedKey struct{}

// Committed marks ctx as work already let in (a request that passed Check before it started):
// its operations wait for their turn up to the context's deadline rather than MaxWait, since
// refusing its third operation would waste the first two and make its client do them again.
// A full queue or a stalled dependency still refuses it.
func Committed(ctx context.Context) context.Context {
	return context.WithValue(ctx, committedKey{}, true)
}

// Acquire waits for a slot, or refuses with a *RefusedError, or returns the context's error
// when it ends first. On success it returns ctx marked as holding the slot and release, which
// the caller must call once the operation is over.
func (l *Limiter) Acquire(ctx context.Context) (context.Context, func(), error) {
	if l == nil || l.o.MaxInFlight < 0 || ctx.Value(heldKey{l}) != nil {
		return ctx, func() {}, nil
	}
	now := time.Now()
	l.mu.Lock()
	if l.inFlight.Len() < l.o.MaxInFlight && l.queue.Len() == 0 {
		e := l.inFlight.PushBack(now)
		l.mu.Unlock()
		return l.held(ctx, e)
	}
	budget, refusal := l.decideLocked(ctx, now)
	if refusal != nil {
		l.mu.Unlock()
		l.refused.Add(1)
		return ctx, nil, refusal
	}
	w := &waiter{granted: make(chan *list.Element, 1)}
	we := l.queue.PushBack(w)
	l.mu.Unlock()

	var giveUp <-chan time.Time
	if budget > 0 {
		t := time.NewTimer(budget)
		defer t.Stop()
		giveUp = t.C
	}
	select {
	case e := <-w.granted:
		return l.held(ctx, e)
	case <-ctx.Done():
		if e, ok := l.leave(we, w); ok {
			l.release(e) // handed over just now: pass it on to the next
		}
		return ctx, nil, context.Cause(ctx)
	case <-giveUp:
		if e, ok := l.leave(we, w); ok {
			return l.held(ctx, e)
		}
		l.refused.Add(1)
		l.mu.Lock()
		defer l.mu.Unlock()
		return ctx, nil, l.refusalLocked("waited too long", time.Now())
	}
}

// Check tells whether an operation with ctx would be refused now, without taking a slot: a
// request can be turned away before it starts any work (the answer may change by the time
// its operations come).
func (l *Limiter) Check(ctx context.Context) error {
	if l == nil || l.o.MaxInFlight < 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight.Len() < l.o.MaxInFlight && l.queue.Len() == 0 {
		return nil
	}
	_, refusal := l.decideLocked(ctx, time.Now())
	if refusal != nil {
		l.refused.Add(1)
		return refusal
	}
	return nil
}

// decideLocked decides for an operation that would have to queue: a refusal, or how long it
// may wait (0: without bound). l.mu is held.
func (l *Limiter) decideLocked(ctx context.Context, now time.Time) (time.Duration, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	if l.queue.Len() >= l.o.MaxQueue {
		return 0, l.refusalLocked("queue full", now)
	}
	if l.inFlight.Len() >= l.o.MaxInFlight && now.Sub(l.fullSinceLocked()) > l.o.MaxWait {
		// Every slot is taken and none has come free for longer than anyone may wait: the
		// dependency has stopped answering, and a waiter would wait past MaxWait.
		r := l.refusalLocked("stalled", now)
		r.RetryAfter = max(r.RetryAfter, l.o.MaxWait) // it will not drain sooner
		return 0, r
	}
	perSlot := l.perSlotLocked(now)
	budget := deadline.Sub(now) - perSlot
	if ctx.Value(committedKey{}) == nil {
		budget = min(l.o.MaxWait, budget)
	}
	if budget <= 0 || l.waitLocked(l.queue.Len(), perSlot) > budget {
		return 0, l.refusalLocked("queue too long", now)
	}
	return budget, nil
}

// fullSinceLocked is when a slot last came free or was last taken, whichever is later: with
// every slot taken, the time since then is how long the dependency has kept all of them. The
// time of the last release alone would not do: after an idle spell (a gateway that just
// started, or a quiet night) it is old, and a burst that has only just filled the slots would
// read as a dependency that stopped answering long ago. l.mu is held.
func (l *Limiter) fullSinceLocked() time.Time {
	since := l.lastDone
	if back := l.inFlight.Back(); back != nil {
		since = later(since, back.Value.(time.Time))
	}
	return since
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// perSlotLocked is S: how long an operation is expected to hold a slot.
func (l *Limiter) perSlotLocked(now time.Time) time.Duration {
	s := l.mean
	if front := l.inFlight.Front(); front != nil {
		s = max(s, now.Sub(front.Value.(time.Time)))
	}
	return s
}

// waitLocked is the expected wait of an operation with ahead operations queued before it.
func (l *Limiter) waitLocked(ahead int, perSlot time.Duration) time.Duration {
	return time.Duration(int64(ahead+1) * int64(perSlot) / int64(l.o.MaxInFlight))
}

func (l *Limiter) refusalLocked(reason string, now time.Time) *RefusedError {
	retry := l.waitLocked(l.queue.Len(), l.perSlotLocked(now))
	return &RefusedError{Name: l.o.Name, Reason: reason, RetryAfter: min(max(retry, MinRetryAfter), MaxRetryAfter)}
}

// leave takes a waiter out of the queue. When the slot was handed to it meanwhile, it
// reports the slot instead, which the waiter then keeps.
func (l *Limiter) leave(we *list.Element, w *waiter) (*list.Element, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case e := <-w.granted:
		return e, true
	default:
	}
	l.queue.Remove(we)
	return nil, false
}

func (l *Limiter) held(ctx context.Context, e *list.Element) (context.Context, func(), error) {
	l.admitted.Add(1)
	var once sync.Once
	return context.WithValue(ctx, heldKey{l}, true), func() { once.Do(func() { l.release(e) }) }, nil
}

// meanWeight is the weight of the newest operation in the mean: about the last 8 count.
const meanWeight = 8

// release ends an operation and hands its slot to the first waiter.
func (l *Limiter) release(e *list.Element) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	took := now.Sub(l.inFlight.Remove(e).(time.Time))
	l.lastDone = now
	if l.mean == 0 {
		l.mean = took
	} else {
		l.mean += (took - l.mean) / meanWeight
	}
	if front := l.queue.Front(); front != nil {
		w := l.queue.Remove(front).(*waiter)
		w.granted <- l.inFlight.PushBack(now)
	}
}

// Stats is a Limiter's state, for metrics.
type Stats struct {
	InFlight, Queued  int
	MeanServiceTime   time.Duration
	Admitted, Refused int64
}

// Stats returns the Limiter's state now.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{InFlight: l.inFlight.Len(), Queued: l.queue.Len(), MeanServiceTime: l.mean,
		Admitted: l.admitted.Load(), Refused: l.refused.Load()}
}
