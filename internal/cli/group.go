package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/msggate/msggate/internal/im"
)

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
	if len(members) > 500 {
		// A large group is written in batches; say why it takes a while.
		fmt.Fprintf(stderr, "setting the %d members of group %s (in batches)...\n", len(members), id)
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
