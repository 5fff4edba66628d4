package graph

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/msggate/msggate/internal/auth"
)

// Defaults of the per-user rate limit (HandlerOptions.RateLimit, RateBurst).
const (
	DefaultRateLimit = 20 // requests a second, sustained
	DefaultRateBurst = 40 // requests at once, after a quiet spell
)

// RateLimiter keeps one token bucket per user where every gateway instance shares it.
// *cache.Cache is one, in Redis.
type RateLimiter interface {
	// TakeToken takes one token from userID's bucket, which holds at most burst tokens and
	// gains perSecond tokens a second. When the bucket is empty it answers false and how long
	// until it holds a token again.
	TakeToken(ctx context.Context, userID string, perSecond float64, burst int) (bool, time.Duration, error)
}

// rateGate refuses an authenticated request whose user has used up their bucket, before the
// request is parsed.
//
// Requests without a valid token are not rate limited: every resolver that reads or writes
// the stores refuses them before it does, so they can only run introspection, whose cost the
// other limits bound, and keying them by client IP would put every client behind one proxy or
// NAT into one bucket. Flooding by anonymous clients is for the proxy in front to stop.
//
// When the limiter cannot answer (Redis is down), the request goes through: reads must keep
// working without Redis. That is logged, at most every logEvery.
func rateGate(limiter RateLimiter, perSecond float64, burst int, logger *slog.Logger) gate {
	const logEvery = 10 * time.Second
	var lastLogged atomic.Int64
	return func(w http.ResponseWriter, req *http.Request) (*http.Request, *refusal) {
		if limiter == nil || perSecond <= 0 || burst <= 0 {
			return req, nil
		}
		viewer, err := auth.ViewerFrom(req.Context())
		if err != nil {
			return req, nil
		}
		ok, retry, err := limiter.TakeToken(req.Context(), viewer.UserID, perSecond, burst)
		switch {
		case err != nil:
			now := time.Now().UnixNano()
			if last := lastLogged.Load(); now-last >= int64(logEvery) && lastLogged.CompareAndSwap(last, now) {
				logger.WarnContext(req.Context(), "rate limiter unavailable; requests are let through", "err", err)
			}
		case !ok:
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
			gerr := limitError(limitRate, "too many requests: at most %s a second, %d at once; retry in %v",
				strconv.FormatFloat(perSecond, 'f', -1, 64), burst, retry)
			gerr.Extensions["retryAfterMs"] = retry.Milliseconds()
			return req, &refusal{http.StatusTooManyRequests, gerr}
		}
		return req, nil
	}
}
