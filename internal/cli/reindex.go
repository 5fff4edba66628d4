package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/search/reindex"
)

// Reindex: msggate reindex [-resume] [flags]
// Builds the search index from the store's chunks (with -openim, an OpenIM deployment's, read
// only): every readable seq of every conversation, as the store shows it now. It can be run again at any time (indexing a message twice is
// indexing it once); it records the last conversation it finished in the data directory, and
// -resume continues after it. On the embedded default, run it while the gateway is stopped
// (the embedded store and index belong to one process at a time). Progress goes to stderr,
// the summary to stdout.
func Reindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var resume bool
	m, err := openForReindex(ctx, args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&resume, "resume", false, "continue after the last conversation an earlier run finished")
	})
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Search == nil {
		return errors.New("reindex: search is off (-search off): there is no index to build")
	}
	var st reindex.Store = m.Store
	if m.OpenIM != nil {
		st = m.OpenIM
	}
	posPath := filepath.Join(m.Config.DataDir, reindexPositionFile)
	after := ""
	if resume {
		b, err := os.ReadFile(posPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if after = strings.TrimSpace(string(b)); after != "" {
			fmt.Fprintf(stderr, "resuming after conversation %s\n", after)
		}
	}
	plan, err := reindex.Measure(ctx, st, after)
	if err != nil {
		return interrupted(ctx, err, after)
	}
	fmt.Fprintf(stderr, "indexing %d conversations, %d seqs\n", plan.Conversations, plan.Seqs)
	sum, err := reindex.Run(ctx, st, m.Search, reindex.Options{After: after, Progress: func(s reindex.Summary) {
		drawReindexProgress(stderr, s, plan)
		if err := writeFileAtomic(posPath, []byte(s.Checkpoint+"\n")); err != nil {
			m.Logger.Warn("recording the reindex position failed", "err", err)
		}
	}})
	fmt.Fprintln(stderr)
	rate := float64(sum.Seqs) / max(sum.Elapsed.Seconds(), 1e-3)
	fmt.Fprintf(stdout, "%d conversations, %d messages indexed, %d seqs removed or empty, in %s (%.0f seqs/s)\n",
		sum.Conversations, sum.Messages, sum.Removed, sum.Elapsed.Round(time.Millisecond), rate)
	if err != nil {
		if sum.Checkpoint != "" {
			fmt.Fprintf(stderr, "indexed through conversation %s; run again with -resume to continue after it\n", sum.Checkpoint)
		}
		return interrupted(ctx, err, sum.Checkpoint)
	}
	if err := os.Remove(posPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// interrupted is err, or when ctx was cancelled (SIGINT), which is why the store failed, a
// plain word that the run was interrupted and how to go on: resume after checkpoint, or,
// with none, start again.
func interrupted(ctx context.Context, err error, checkpoint string) error {
	if ctx.Err() == nil {
		return err
	}
	if checkpoint != "" {
		return errors.New("reindex interrupted; run it again with -resume to continue")
	}
	return errors.New("reindex interrupted before it finished a conversation; run it again to start over")
}

// openForReindex opens the stores as openForCommand does, and in OpenIM mode OpenIM's
// deployment, read-only, with the search index the flags name: the chunks are OpenIM's, the
// index msggate's. It does not follow OpenIM's Kafka (a running gateway does).
func openForReindex(ctx context.Context, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*gateway.Gateway, error) {
	var cfg gateway.Config
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	extra(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if !cfg.OpenIM.Enabled {
		m, _, err := openForCommand(ctx, "reindex", args, stderr, extra)
		return m, err
	}
	cfg.OpenIM.Feed.Brokers = ""
	m, err := gateway.Open(ctx, cfg, slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, err
	}
	if err := m.OpenSearch(); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// reindexPositionFile, in the data directory, holds the last conversation a reindex finished.
const reindexPositionFile = "search-reindex-position"

// drawReindexProgress redraws a one-line progress bar over the seqs to read.
func drawReindexProgress(w io.Writer, s reindex.Summary, plan reindex.Plan) {
	const width = 30
	frac := 1.0
	if plan.Seqs > 0 {
		frac = min(float64(s.Seqs)/float64(plan.Seqs), 1)
	}
	done := int(frac * width)
	fmt.Fprintf(w, "\r[%s%s] %3.0f%%  %d/%d conversations  %d messages  %.0f seqs/s", strings.Repeat("=", done),
		strings.Repeat(" ", width-done), frac*100, s.Conversations, plan.Conversations, s.Messages,
		float64(s.Seqs)/max(s.Elapsed.Seconds(), 1e-3))
}

// writeFileAtomic writes aside and renames, so a crash leaves the old content or the new.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
