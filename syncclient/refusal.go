package syncclient

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// closeTryAgainLater is RFC 6455's 1013: the gateway refuses new connections for now (a store
// is down, or it is shedding a reconnect storm). The reason text may carry a hint.
const closeTryAgainLater = websocket.StatusTryAgainLater

// The gateway refuses work it cannot do in time, rather than failing it: over HTTP with 503
// or 429, a Retry-After header (whole seconds) and a GraphQL error whose extensions carry
// code UNAVAILABLE or LIMIT_EXCEEDED and retryAfterMs; over WebSocket with such an error
// payload, or by closing with 1013. A refusal is not a failure: nothing was done, and the same
// request may be sent again once the hint has passed.

// IsRefusal reports whether err is the gateway refusing work for now (see above) rather than
// failing it. Such a request is retried no sooner than RetryAfter says.
func IsRefusal(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.HTTPStatus == http.StatusServiceUnavailable, e.HTTPStatus == http.StatusTooManyRequests:
			return true
		case e.RetryAfter > 0 && (e.Code == "UNAVAILABLE" || e.Code == "LIMIT_EXCEEDED"):
			return true
		}
		return false
	}
	return websocket.CloseStatus(err) == closeTryAgainLater
}

// RetryAfter returns the gateway's hint in err: the least time to wait before asking again.
// ok is false when err carries none.
func RetryAfter(err error) (wait time.Duration, ok bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter, e.RetryAfter > 0
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Code == closeTryAgainLater {
		d := hintInReason(ce.Reason)
		return d, d > 0
	}
	return 0, false
}

// reasonHint finds "retryAfterMs=1500" (or ": 1500") or a Go duration after "retry after"
// / "retry in" in a close reason; the gateway's reason text is meant for people, so anything
// else is no hint (the backoff alone paces the client).
var reasonHint = regexp.MustCompile(`(?i)retryAfterMs[=: ]+(\d+)|retry (?:after|in) ([0-9.]+(?:ms|s|m))`)

func hintInReason(reason string) time.Duration {
	m := reasonHint.FindStringSubmatch(reason)
	switch {
	case m == nil:
		return 0
	case m[1] != "":
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Duration(n) * time.Millisecond
	default:
		d, _ := time.ParseDuration(strings.ToLower(m[2]))
		return d
	}
}

// retryAfterOf reads a refusal's hint from its answer: extensions.retryAfterMs when the error
// has it (milliseconds, finer than the header), else the Retry-After header (whole seconds;
// an HTTP date is not used by the gateway and is ignored).
func retryAfterOf(ext map[string]any, header http.Header) time.Duration {
	if ms, ok := ext["retryAfterMs"].(float64); ok && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.Atoi(strings.TrimSpace(header.Get("Retry-After"))); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
