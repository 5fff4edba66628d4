package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/msggate/msggate/internal/chunkstore"
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
	members, err := parseMembers(id, list)
	if err != nil {
		return err
	}
	if err := m.Ledger.SetGroup(ctx, id, members); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "group %s now has %d members\n", id, len(members))
	return nil
}

func parseMembers(groupID, list string) ([]chunkstore.GroupMember, error) {
	if err := im.ValidateID("group ID (-id)", groupID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(list) == "" {
		return nil, errors.New("-members is required")
	}
	roles := map[string]int32{"": im.RoleMember, "member": im.RoleMember, "admin": im.RoleAdmin, "owner": im.RoleOwner}
	var out []chunkstore.GroupMember
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		user, role, _ := strings.Cut(strings.TrimSpace(item), ":")
		r, ok := roles[strings.ToLower(role)]
		if !ok {
			return nil, fmt.Errorf("member %q: role must be owner, admin or member", item)
		}
		if err := im.ValidateID("member", user); err != nil {
			return nil, err
		}
		if seen[user] {
			return nil, fmt.Errorf("member %q is listed twice", user)
		}
		seen[user] = true
		out = append(out, chunkstore.GroupMember{GroupID: groupID, UserID: user, Role: r})
	}
	return out, nil
}
