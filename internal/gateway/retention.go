package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/msggate/msggate/internal/retention"
)

// RetentionConfig is the retention part of Config: how old history may get before the
// retention job deletes it (internal/retention). Every gateway instance with Days > 0 runs the
// job; running it on several at once is safe (its steps are idempotent), only redundant.
type RetentionConfig struct {
	Days     int           // MSGGATE_RETENTION_DAYS; 0 keeps history forever
	Interval time.Duration // MSGGATE_RETENTION_INTERVAL, default 1h: time between runs
	// envErr is a malformed environment value, reported when retention starts (flag
	// registration cannot fail).
	envErr error
}

// flags registers -retention-days and -retention-interval, with defaults from the environment.
func (c *RetentionConfig) flags(fs *flag.FlagSet) {
	days, interval := 0, retention.DefaultInterval
	c.envErr = nil
	if v, ok := os.LookupEnv("MSGGATE_RETENTION_DAYS"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.envErr = fmt.Errorf("MSGGATE_RETENTION_DAYS=%q is not a whole number of days", v)
		}
		days = n
	}
	if v, ok := os.LookupEnv("MSGGATE_RETENTION_INTERVAL"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.envErr = errors.Join(c.envErr, fmt.Errorf("MSGGATE_RETENTION_INTERVAL=%q is not a duration such as 1h", v))
		}
		interval = d
	}
	fs.IntVar(&c.Days, "retention-days", days, "delete history older than this many days; 0 keeps it forever (MSGGATE_RETENTION_DAYS)")
	fs.DurationVar(&c.Interval, "retention-interval", interval, "time between retention runs (MSGGATE_RETENTION_INTERVAL)")
}

// maxAge checks the configuration and returns the age history may reach; 0 means retention
// is off.
func (c RetentionConfig) maxAge() (time.Duration, error) {
	if c.envErr != nil {
		return 0, c.envErr
	}
	if c.Days < 0 {
		return 0, fmt.Errorf("-retention-days must be 0 (off) or more, got %d", c.Days)
	}
	if c.Interval < 0 {
		return 0, fmt.Errorf("-retention-interval must not be negative, got %s", c.Interval)
	}
	return time.Duration(c.Days) * 24 * time.Hour, nil
}

// startRetention runs the retention job in the background until ctx ends, when cfg asks for
// it. The returned wait blocks until the job has stopped: call it after ctx ended and before
// m.Close, so that no run is cut off by closed stores. With retention off, nothing starts and
// wait returns at once.
func startRetention(ctx context.Context, m *Main, cfg RetentionConfig, logger *slog.Logger) (wait func(), err error) {
	age, err := cfg.maxAge()
	if err != nil || age == 0 {
		return func() {}, err
	}
	job := retention.New(m.Store, m.Cache, m.Ledger, retention.Options{MaxAge: age, Interval: cfg.Interval, Logger: logger})
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

// retentionCommand: msggate retention -days N
// One run of the retention job over every conversation, now: what a gateway with
// -retention-days N does every interval. Progress goes to stderr, the summary to stdout.
func retentionCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var days int
	m, _, err := openForCommand(ctx, "retention", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&days, "days", 0, "delete history older than this many days (required, at least 1)")
	})
	if err != nil {
		return err
	}
	defer m.Close()
	if days < 1 {
		return errors.New("usage: msggate retention -days N [flags] (N >= 1: history older than N days is deleted)")
	}
	job := retention.New(m.Store, m.Cache, m.Ledger, retention.Options{
		MaxAge: time.Duration(days) * 24 * time.Hour,
		Logger: m.Logger,
		Progress: func(s retention.Summary) {
			fmt.Fprintf(stderr, "%d conversations scanned, %d chunks deleted so far\n", s.Conversations, s.ChunksDeleted)
		},
	})
	sum, err := job.RunOnce(ctx)
	fmt.Fprintln(stdout, sum)
	return err
}
