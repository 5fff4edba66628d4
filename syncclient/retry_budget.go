package syncclient

import (
	"sync"
	"time"
)

// Default numbers of a RetryBudget (NewRetryBudget with zeros), and why:
//
//   - DefaultRetryRatio 0.2: each first attempt deposits 0.2 tokens and each retry spends
//     one, so over any stretch retries are at most a fifth of the first attempts (plus the
//     floor and what the bucket held): a client never multiplies the load it offers, however
//     long the gateway refuses. Finagle's RetryBudget allows 20% too; gRPC's retry
//     throttling deposits 0.1 per success.
//   - DefaultRetryFloor 0.1 a second: a client that offers little (a device between two
//     events, an app user between two actions) still earns one retry every 10 s, so a change
//     the user made is never stuck behind an empty bucket for longer than that.
//   - DefaultRetryBurst 3: at most three retries in a row come from savings, enough to ride
//     out a short fault (a gateway restarting, about a second) at the backoff's pace without
//     waiting on the floor. Many clients each holding a burst add up (200 apps: 600 retries
//     at once), so it stays small.
const (
	DefaultRetryRatio = 0.2
	DefaultRetryFloor = 0.1
	DefaultRetryBurst = 3
)

// RetryBudget bounds how many retries a client sends against how much work it asks for, so
// that retries never multiply the load on a gateway that is already refusing: a token bucket
// where each first attempt deposits ratio tokens, each retry spends one, and the bucket also
// gains floor tokens a second, holding at most burst. It starts full. It is safe for
// concurrent use; several clients may share one (a process's budget, as Finagle keeps one per
// client) or keep their own (one per device).
type RetryBudget struct {
	ratio, floor, burst float64
	now                 func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
	// deposits and withdrawals count first attempts and retries allowed, for reports.
	deposits, withdrawals, refusals int64
}

// NewRetryBudget returns a budget; a zero or negative argument takes its default
// (DefaultRetryRatio, DefaultRetryFloor, DefaultRetryBurst).
func NewRetryBudget(ratio, floorPerSecond, burst float64) *RetryBudget {
	if ratio <= 0 {
		ratio = DefaultRetryRatio
	}
	if floorPerSecond <= 0 {
		floorPerSecond = DefaultRetryFloor
	}
	if burst <= 0 {
		burst = DefaultRetryBurst
	}
	return &RetryBudget{ratio: ratio, floor: floorPerSecond, burst: max(burst, 1), tokens: max(burst, 1), now: time.Now}
}

// refill adds the floor's tokens since the last look; b.mu is held.
func (b *RetryBudget) refill() {
	now := b.now()
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.floor)
	}
	b.last = now
}

// Deposit records a first attempt.
func (b *RetryBudget) Deposit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.tokens = min(b.burst, b.tokens+b.ratio)
	b.deposits++
}

// TryRetry spends a token for one retry. When the bucket holds less than one it spends
// nothing and answers false and how long the floor alone takes to make one (deposits of
// other attempts may come sooner): the caller waits, its work still pending, rather than
// sending.
func (b *RetryBudget) TryRetry() (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	// Deposits of 0.1 add up to 0.9999999...: within a millionth is a whole token.
	if b.tokens >= 1-1e-6 {
		b.tokens = max(0, b.tokens-1)
		b.withdrawals++
		return true, 0
	}
	b.refusals++
	return false, time.Duration((1 - b.tokens) / b.floor * float64(time.Second))
}

// BudgetStats is what a RetryBudget allowed and refused.
type BudgetStats struct {
	// FirstAttempts deposited; Retries allowed; Held: retries asked for while the bucket was
	// empty (each such ask made the caller wait).
	FirstAttempts, Retries, Held int64
}

// Stats returns the counts so far.
func (b *RetryBudget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{FirstAttempts: b.deposits, Retries: b.withdrawals, Held: b.refusals}
}
