package gateway

import (
	"context"
	"log/slog"

	"github.com/msggate/msggate/internal/retention"
)

// StartRetention runs the retention job in the background until ctx ends, when g's
// configuration asks for it (Config.Retention). The returned wait blocks until the job has
// stopped: call it after ctx ended and before g.Close, so that no run is cut off by closed
// stores. With retention off, nothing starts and wait returns at once.
func (g *Gateway) StartRetention(ctx context.Context, logger *slog.Logger) (wait func(), err error) {
	cfg := g.Config.Retention
	age, err := cfg.MaxAge()
	if err != nil || age == 0 {
		return func() {}, err
	}
	job := retention.New(g.Store, g.Cache, g.Ledger, retention.Options{MaxAge: age, Interval: cfg.Interval, Logger: logger})
	logger.Info("retention on: deleting history older than the limit", "days", cfg.Days, "interval", cfg.Interval.String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := job.Run(ctx); err != nil {
			logger.Error("retention stopped", "err", err)
		}
	}()
	return func() { <-done }, nil
}
