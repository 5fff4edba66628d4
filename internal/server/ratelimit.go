package server

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/internal/auth"
)

// Defaults of the rate limits (Settings.RateLimit, RateBurst, AnonymousRateLimit,
// AnonymousRateBurst).
const (
	DefaultRateLimit = 20 // requests a second per user, sustained
	DefaultRateBurst = 40 // requests per user at once, after a quiet spell
	// Requests without a valid token, per client address. They can only introspect the
	// schema (GraphiQL does once per page load) or be refused, so few are ever needed; clients
	// behind one NAT share the bucket, hence the burst.
	DefaultAnonymousRateLimit = 5
	DefaultAnonymousRateBurst = 20
)

// RateLimiter keeps token buckets where every gateway instance shares them. *cache.Cache is
// one, in Redis.
type RateLimiter interface {
	// TakeToken takes one token from userID's bucket, which holds at most burst tokens and
	// gains perSecond tokens a second. When the bucket is empty it answers false and how long
	// until it holds a token again.
	TakeToken(ctx context.Context, userID string, perSecond float64, burst int) (bool, time.Duration, error)
	// TakeAddressToken is TakeToken for the bucket of a client address (anonymous requests).
	TakeAddressToken(ctx context.Context, address string, perSecond float64, burst int) (bool, time.Duration, error)
}

// rateGate refuses a request whose bucket is empty, before the request is parsed: an
// authenticated request takes a token from its user's bucket, one without a valid token from
// its client address's (clientAddress). WebSocket upgrades are not counted by address: until
// connection_init they are bounded by the connections an address may hold waiting
// (connectionGate), and their operations then take tokens from their user's bucket.
//
// When the limiter cannot answer (Redis is down), the request goes through: reads must keep
// working without Redis. That is logged, at most every logEvery.
func rateGate(o options) gate {
	const logEvery = 10 * time.Second
	var lastLogged atomic.Int64
	limiter := o.RateLimiter
	return func(w http.ResponseWriter, req *http.Request) (*http.Request, *refusal) {
		if limiter == nil {
			return req, nil
		}
		ctx := req.Context()
		var ok bool
		var retry time.Duration
		var err error
		var refused *gqlerror.Error
		viewer, anonymous := auth.ViewerFrom(ctx)
		switch {
		case anonymous == nil && o.RateLimit > 0 && o.RateBurst > 0:
			ok, retry, err = limiter.TakeToken(ctx, viewer.UserID, o.RateLimit, o.RateBurst)
			refused = rateError(limitRate, "", o.RateLimit, o.RateBurst, retry)
		case anonymous != nil && o.AnonymousRateLimit > 0 && o.AnonymousRateBurst > 0 && req.Header.Get("Upgrade") == "":
			addr := clientAddress(req, o.ClientIPHeader)
			ok, retry, err = limiter.TakeAddressToken(ctx, addr, o.AnonymousRateLimit, o.AnonymousRateBurst)
			refused = rateError(limitAnonymousRate, " from this address without a valid token", o.AnonymousRateLimit, o.AnonymousRateBurst, retry)
		default:
			return req, nil
		}
		switch {
		case err != nil:
			now := time.Now().UnixNano()
			if last := lastLogged.Load(); now-last >= int64(logEvery) && lastLogged.CompareAndSwap(last, now) {
				o.Logger.WarnContext(ctx, "rate limiter unavailable; requests are let through", "err", err)
			}
		case !ok:
			setRetryAfter(w, retry)
			return req, &refusal{http.StatusTooManyRequests, refused}
		}
		return req, nil
	}
}

// rateError is the error of a request refused by a rate limit; who names the bucket in the
// message ("" for the user's own).
func rateError(limit, who string, perSecond float64, burst int, retry time.Duration) *gqlerror.Error {
	gerr := limitError(limit, "too many requests%s: at most %s a second, %d at once; retry in %v",
		who, strconv.FormatFloat(perSecond, 'f', -1, 64), burst, retry)
	gerr.Extensions["retryAfterMs"] = retry.Milliseconds()
	return gerr
}
