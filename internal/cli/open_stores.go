package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/msggate/msggate/internal/gateway"
)

// The store-changing subcommands (group, seed, import, retention) open the same stores the
// gateway would with the same flags and environment. On the embedded default, run them while
// the gateway is stopped: the embedded store's files belong to one process at a time.

// openForCommand parses the common flags plus the command's own (added by extra), before or
// after the command's positional arguments, and opens the stores.
func openForCommand(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*gateway.Gateway, *flag.FlagSet, error) {
	var cfg gateway.Config // the embedded store logs to its file in the data dir, not to stderr
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	if cfg.OpenIM.Enabled {
		return nil, nil, fmt.Errorf("%s changes msggate's own store; with -openim msggate only reads OpenIM's", name)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := gateway.Open(ctx, cfg, logger)
	if err == nil {
		if err = storesChecked(ctx, m); err != nil {
			_ = m.Close()
			m = nil
		}
	}
	return m, fs, err
}

// storesChecked waits until the gateway's Redis is known to describe its store (another
// store's state discarded), so that a command that writes works on the store's own state.
func storesChecked(ctx context.Context, m *gateway.Gateway) error {
	select {
	case <-m.StoreIdentity.Confirmed():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
