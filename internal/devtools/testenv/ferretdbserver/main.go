// Command ferretdbserver runs FerretDB (SQLite backend) as a standalone
// process for tests.
//
// Tests start it as a child process instead of embedding FerretDB so that the
// server is not race-instrumented under `go test -race`, which would make it
// several times slower. It prints a single "MONGODB_URI=<uri>" line on stdout
// once it accepts connections and exits on SIGTERM/SIGINT or when its stdin is
// closed, so it never outlives the test binary that started it.
//
// With -index-ids it instead gives a database's collections the index FerretDB's lookups by
// _id need (embedded.IndexIDs) and exits: the same SQLite code, run outside the
// race-instrumented test binary, which thus never links SQLite.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/msggate/msggate/internal/embedded"
)

func main() {
	dir := flag.String("dir", "", "SQLite data directory (created if missing)")
	removeOnExit := flag.String("remove-on-exit", "", "directory to delete on exit (test scratch space)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0: any free one)")
	indexIDs := flag.String("index-ids", "", "index _id in this database's collections under -dir (a server may be running on it), then exit")
	flag.Parse()

	var err error
	if *indexIDs != "" {
		err = index(*dir, *indexIDs)
	} else {
		err = run(*dir, *addr, *removeOnExit)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdbserver:", err)
		os.Exit(1)
	}
}

func index(dir, database string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return embedded.IndexIDs(ctx, dir, database)
}

func run(dir, addr, removeOnExit string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if removeOnExit != "" {
		defer os.RemoveAll(removeOnExit)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The parent keeps our stdin open for its whole life; EOF means it is gone
	// (even if it was SIGKILLed and could not signal us).
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	// FerretDB logs every connection at info level, which would drown test
	// output; warnings and errors still reach the parent via stderr.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	uri, stopFerret, err := embedded.StartFerretDBOn(ctx, dir, addr, logger)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		done <- stopFerret()
	}()

	// The listener is bound before StartFerretDB returns, so the URI is valid right away.
	if _, err := fmt.Fprintf(os.Stdout, "MONGODB_URI=%s\n", uri); err != nil {
		return err
	}

	<-ctx.Done()
	// A wedged shutdown must not keep the process (and its temp dir) alive.
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return fmt.Errorf("shutdown timed out")
	}
}
