package syncclient

import (
	"math/rand/v2"
	"time"
)

// Backoff computes the waits between retries of one piece of work: exponential with
// "decorrelated jitter" (Marc Brooker, "Exponential Backoff And Jitter", AWS Architecture
// Blog): each wait is drawn uniformly from [Min, 3 × the previous wait] and capped at Max.
// The waits grow about threefold while failures go on, yet clients that failed together
// spread apart at once instead of coming back in step, and no wait is shorter than Min.
//
// A retry hint from the gateway (Retry-After, extensions.retryAfterMs, see RetryAfter) is a
// floor: the wait is at least the hint, plus up to half of it at random, because every client
// refused in the same moment is told nearly the same hint, and returning exactly on it would
// make the next moment's storm. A hint above Max is honoured all the same: the gateway knows
// best when it can take work again.
//
// The zero value waits 100 ms to 5 s. A Backoff is not safe for concurrent use: each retry
// loop keeps its own.
type Backoff struct {
	Min, Max time.Duration
	prev     time.Duration
}

// Next returns the wait before the next retry, hint being the gateway's (0 when it gave
// none).
func (b *Backoff) Next(hint time.Duration) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi < lo {
		hi = max(5*time.Second, lo)
	}
	top := max(lo, 3*b.prev)
	wait := min(hi, lo+rand.N(top-lo+1))
	if hint > 0 {
		wait = max(wait, hint+rand.N(hint/2+1))
	}
	b.prev = min(wait, hi)
	return wait
}

// Reset starts the waits from Min again, after the work succeeded.
func (b *Backoff) Reset() { b.prev = 0 }
