package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
)

// The store-changing subcommands (group, seed, import, retention) open the same stores the
// gateway would with the same flags and environment. On the embedded default, run them while
// the gateway is stopped: the embedded store's files belong to one process at a time.

// openForCommand parses the common flags plus the command's own (added by extra) and opens
// the stores.
func openForCommand(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*gateway.Gateway, *flag.FlagSet, error) {
	cfg := gateway.Config{LogOutput: stderr}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if cfg.OpenIM.Enabled {
		return nil, nil, fmt.Errorf("%s changes msggate's own store; with -openim msggate only reads OpenIM's", name)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := gateway.Open(ctx, cfg, logger)
	return m, fs, err
}

// Group: msggate group -id G -members alice:owner,bob:admin,carol
func Group(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var id, list string
	m, _, err := openForCommand(ctx, "group", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&id, "id", "", "group ID (required)")
		fs.StringVar(&list, "members", "", "comma-separated members, each user[:owner|admin|member] (required)")
	})
	if err != nil {
		return err
	}
	defer m.Close()
	members, err := parseMembers(list)
	if err != nil {
		return err
	}
	if err := m.Ledger.SetGroup(ctx, id, members); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "group %s now has %d members\n", id, len(members))
	return nil
}

// parseMembers reads the -members flag; the ledger checks the list with the group ID.
func parseMembers(list string) ([]im.GroupMember, error) {
	if strings.TrimSpace(list) == "" {
		return nil, errors.New("-members is required")
	}
	return im.ParseGroupMembers(list)
}
