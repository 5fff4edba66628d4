package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

// The store-changing subcommands (group, seed, import) open the same stores the gateway would
// with the same flags and environment. On the embedded default, run them while the gateway is
// stopped: the embedded store's files belong to one process at a time.

// openForCommand parses the common flags plus the command's own (added by extra) and opens
// the stores.
func openForCommand(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*Main, *flag.FlagSet, error) {
	cfg := Config{LogOutput: stderr}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := Open(ctx, cfg, logger)
	return m, fs, err
}

// groupCommand: msggate group -id G -members alice:owner,bob:admin,carol
func groupCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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

// seedCommand: msggate seed
func seedCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, _, err := openForCommand(ctx, "seed", args, stderr, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := seedDemo(ctx, m, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo data stored; try it as %s with the query:\n  %s\n", demoUser, demoQuery)
	return nil
}

// importCommand: msggate import FILE
func importCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, fs, err := openForCommand(ctx, "import", args, stderr, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if fs.NArg() != 1 {
		return errors.New("usage: msggate import [flags] FILE (JSON Lines of messages with OpenIM field names)")
	}
	sum, err := importFile(ctx, m, fs.Arg(0), stderr)
	for _, e := range sum.Errors {
		fmt.Fprintln(stderr, e)
	}
	fmt.Fprintln(stdout, sum)
	return err
}
