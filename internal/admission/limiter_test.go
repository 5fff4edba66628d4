package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t *testing.T, l *Limiter, ctx context.Context) func() {
	t.Helper()
	_, release, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return release
}

func refusal(t *testing.T, err error) *RefusedError {
	t.Helper()
	var r *RefusedError
	if !errors.As(err, &r) || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("got %v, want a refusal", err)
	}
	if r.RetryAfter < MinRetryAfter || r.RetryAfter > MaxRetryAfter {
		t.Fatalf("retry hint %v out of [%v, %v]", r.RetryAfter, MinRetryAfter, MaxRetryAfter)
	}
	return r
}

// Ensure operations beyond the slots wait, in order, and get a slot as one is released.
func TestLimiterQueuesInOrder(t *testing.T) {
	l := New(Options{MaxInFlight: 1})
	release := mustAcquire(t, l, withTimeout(t, 5*time.Second))
	order := make(chan int, 2)
	for i := range 2 {
		go func() {
			r := mustAcquire(t, l, withTimeout(t, 5*time.Second))
			order <- i
			r()
		}()
		for l.Stats().Queued != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()
	if a, b := <-order, <-order; a != 0 || b != 1 {
		t.Fatalf("order %d, %d; want 0, 1", a, b)
	}
	if s := l.Stats(); s.InFlight != 0 || s.Queued != 0 || s.Admitted != 3 {
		t.Fatalf("stats after: %+v", s)
	}
}

// Ensure an operation whose expected wait exceeds what is left of its deadline is refused at
// once, not when the deadline comes, with the time the queue needs to drain as its hint.
func TestLimiterRefusesWhatCannotFinishInTime(t *testing.T) {
	l := New(Options{MaxInFlight: 2, MaxWait: time.Minute})
	defer mustAcquire(t, l, context.Background())()
	defer mustAcquire(t, l, context.Background())()
	l.mean = time.Second // two slots turning over once a second: one place in the queue is 0.5 s

	began := time.Now()
	_, _, err := l.Acquire(withTimeout(t, 1200*time.Millisecond)) // 0.5 s wait + 1 s work > 1.2 s
	r := refusal(t, err)
	if took := time.Since(began); took > 50*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	if r.RetryAfter < 400*time.Millisecond || r.RetryAfter > 600*time.Millisecond {
		t.Fatalf("retry hint %v, want about 0.5 s", r.RetryAfter)
	}
	if err := l.Check(withTimeout(t, 1200*time.Millisecond)); err == nil {
		t.Fatal("Check let through what Acquire refuses")
	}
	// With time enough it waits.
	if err := l.Check(withTimeout(t, 3*time.Second)); err != nil {
		t.Fatalf("Check with time enough: %v", err)
	}
}

// Ensure committed work waits past MaxWait, up to its deadline.
func TestLimiterCommittedWaits(t *testing.T) {
	l := New(Options{MaxInFlight: 1, MaxWait: 50 * time.Millisecond})
	release := mustAcquire(t, l, context.Background())
	go func() { time.Sleep(200 * time.Millisecond); release() }()
	began := time.Now()
	r := mustAcquire(t, l, Committed(withTimeout(t, 10*time.Second)))
	r()
	if took := time.Since(began); took < 150*time.Millisecond {
		t.Fatalf("got a slot after %v, before one came free", took)
	}
}

// Ensure an operation is refused when the wait exceeds MaxWait, and a waiter still waiting
// after MaxWait is refused then.
func TestLimiterMaxWait(t *testing.T) {
	l := New(Options{MaxInFlight: 1, MaxWait: 100 * time.Millisecond})
	release := mustAcquire(t, l, context.Background())
	defer release()

	began := time.Now()
	_, _, err := l.Acquire(withTimeout(t, 10*time.Second)) // no mean yet: expected wait 0
	refusal(t, err)
	if took := time.Since(began); took < 90*time.Millisecond || took > time.Second {
		t.Fatalf("gave up after %v, want about 100 ms", took)
	}
	if s := l.Stats(); s.Queued != 0 || s.Refused != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

// Ensure a dependency that stopped answering is seen by the age of what is stuck in it, not
// by the mean of what finished before: new operations are refused at once.
func TestLimiterSeesAStall(t *testing.T) {
	l := New(Options{MaxInFlight: 1, MaxWait: 200 * time.Millisecond})
	r := mustAcquire(t, l, context.Background())
	time.Sleep(20 * time.Millisecond)
	r()                                             // mean about 20 ms
	defer mustAcquire(t, l, context.Background())() // stuck
	time.Sleep(300 * time.Millisecond)

	began := time.Now()
	_, _, err := l.Acquire(withTimeout(t, 10*time.Second))
	if r := refusal(t, err); r.RetryAfter < 300*time.Millisecond {
		t.Fatalf("retry hint %v, want at least the stall's age", r.RetryAfter)
	}
	if took := time.Since(began); took > 50*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
}

// Ensure that when every slot is stuck and none came free for longer than MaxWait, new
// operations are refused at once, however many slots there are.
func TestLimiterStalledRefusesAtOnce(t *testing.T) {
	l := New(Options{MaxInFlight: 8, MaxWait: 100 * time.Millisecond})
	for range 8 {
		defer mustAcquire(t, l, context.Background())()
	}
	time.Sleep(150 * time.Millisecond)
	began := time.Now()
	_, _, err := l.Acquire(withTimeout(t, 10*time.Second))
	if r := refusal(t, err); r.Reason != "stalled" {
		t.Fatalf("reason %q, want stalled", r.Reason)
	}
	if took := time.Since(began); took > 50*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
}

// Ensure a limiter that sat idle for longer than MaxWait (a gateway that just started) does not
// read a burst that has only just taken every slot as a stall: the burst queues and is let
// through as slots come free.
func TestLimiterIdleThenBurstIsNotAStall(t *testing.T) {
	// MaxWait is far above the 20 ms the burst waits, so that only a refusal read from the
	// idle time fails the test, not a loaded machine that runs the releasing goroutine late.
	l := New(Options{MaxInFlight: 2, MaxWait: time.Second})
	time.Sleep(1100 * time.Millisecond) // idle for longer than MaxWait, nothing ever finished
	first := mustAcquire(t, l, withTimeout(t, 10*time.Second))
	second := mustAcquire(t, l, withTimeout(t, 10*time.Second))
	go func() { time.Sleep(20 * time.Millisecond); first(); second() }()
	for range 2 {
		mustAcquire(t, l, withTimeout(t, 10*time.Second))()
	}
	if s := l.Stats(); s.Refused != 0 || s.Admitted != 4 {
		t.Fatalf("stats after the burst: %+v, want 4 admitted and none refused", s)
	}
}

// Ensure a full queue refuses.
func TestLimiterQueueFull(t *testing.T) {
	l := New(Options{MaxInFlight: 1, MaxQueue: 1, MaxWait: time.Minute})
	defer mustAcquire(t, l, context.Background())()
	ctx, cancel := context.WithCancel(withTimeout(t, time.Minute))
	done := make(chan error)
	go func() { _, _, err := l.Acquire(ctx); done <- err }()
	for l.Stats().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	_, _, err := l.Acquire(withTimeout(t, time.Minute))
	if r := refusal(t, err); r.Reason != "queue full" {
		t.Fatalf("reason %q", r.Reason)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	if s := l.Stats(); s.Queued != 0 || s.InFlight != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

// Ensure work without a deadline (it must finish once begun) is never refused, even with the
// queue full, and that nested operations hold one slot.
func TestLimiterWorkWithoutDeadlineWaits(t *testing.T) {
	l := New(Options{MaxInFlight: 1, MaxQueue: 1, MaxWait: time.Millisecond})
	ctx, release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, inner, err := l.Acquire(ctx); err != nil {
		t.Fatalf("nested: %v", err)
	} else {
		inner()
	}
	got := make(chan error, 2)
	for range 2 {
		go func() {
			_, r, err := l.Acquire(context.Background())
			if err == nil {
				r()
			}
			got <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	release()
	for range 2 {
		if err := <-got; err != nil {
			t.Fatalf("work without a deadline: %v", err)
		}
	}
}

// Ensure a negative MaxInFlight switches the limit off.
func TestLimiterOff(t *testing.T) {
	l := New(Options{MaxInFlight: -1})
	for range 100 {
		mustAcquire(t, l, withTimeout(t, time.Millisecond))
	}
	var nilLimiter *Limiter
	mustAcquire(t, nilLimiter, context.Background())()
}

// Ensure the pacer lets a burst through, then one per 1/rate, and says when.
func TestPacer(t *testing.T) {
	p := NewPacer(10, 3)
	for i := range 3 {
		if ok, _ := p.Take(); !ok {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	ok, wait := p.Take()
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("after the burst: %v, %v", ok, wait)
	}
	time.Sleep(wait + 5*time.Millisecond)
	if ok, _ := p.Take(); !ok {
		t.Fatal("no token after the wait it gave")
	}
	if ok, _ := (*Pacer)(nil).Take(); !ok {
		t.Fatal("a nil pacer refused")
	}
}
