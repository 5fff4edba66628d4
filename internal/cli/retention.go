package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/msggate/msggate/internal/retention"
)

// Retention: msggate retention -days N
// One run of the retention job over every conversation, now: what a gateway with
// -retention-days N does every interval. Progress goes to stderr, the summary to stdout.
func Retention(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
