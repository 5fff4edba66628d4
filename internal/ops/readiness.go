package ops

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"
)

// Check is one dependency readiness waits for.
type Check struct {
	Name string                          // as it appears in the answer: "mongodb", "redis"
	Ping func(ctx context.Context) error // nil error: the dependency answered
}

// Readiness is the body /readyz answers with.
type Readiness struct {
	Status  string            `json:"status"`            // "ready" or "unavailable"
	Failing []string          `json:"failing,omitempty"` // names of the checks that failed, in order
	Checks  map[string]string `json:"checks"`            // name -> "ok", "unreachable" or "timeout"
}

// DefaultReadinessTimeout bounds each check: a load balancer polls often and must learn that
// a dependency hangs, not hang with it.
const DefaultReadinessTimeout = 2 * time.Second

// ReadinessHandler answers 200 when every check's Ping returns nil within timeout, and 503
// otherwise; the JSON body names each check's outcome. Checks run concurrently, so the answer
// takes at most about timeout however many there are. Failures are logged with their cause;
// the body says only "unreachable" or "timeout", so that no host names or driver messages
// reach whoever can poll the endpoint. timeout <= 0 means DefaultReadinessTimeout.
func ReadinessHandler(logger *slog.Logger, timeout time.Duration, checks ...Check) http.Handler {
	if timeout <= 0 {
		timeout = DefaultReadinessTimeout
	}
	logger = WithRequestIDs(logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		errs := make([]chan error, len(checks))
		for i, c := range checks {
			errs[i] = make(chan error, 1)
			go func() { errs[i] <- c.Ping(ctx) }()
		}
		body := Readiness{Status: "ready", Checks: make(map[string]string, len(checks))}
		for i, c := range checks {
			var err error
			// An answer already in wins over the deadline, which an earlier slow check may
			// have used up; a Ping that ignores its context must not hold the answer.
			select {
			case err = <-errs[i]:
			default:
				select {
				case err = <-errs[i]:
				case <-ctx.Done():
					err = ctx.Err()
				}
			}
			outcome := "ok"
			switch {
			case err == nil:
			case errors.Is(err, context.DeadlineExceeded):
				outcome = "timeout"
			default:
				outcome = "unreachable"
			}
			body.Checks[c.Name] = outcome
			if err != nil {
				body.Status = "unavailable"
				body.Failing = append(body.Failing, c.Name)
				logger.WarnContext(r.Context(), "not ready", "dependency", c.Name, "outcome", outcome, "err", err)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if body.Status != "ready" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
}
