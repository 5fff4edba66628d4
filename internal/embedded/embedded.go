// Package embedded runs in-process stand-ins for MongoDB (FerretDB on SQLite)
// and Redis (miniredis) so that msggate can start without external servers, and gives
// FerretDB's SQLite tables the index its lookups by _id need (IndexIDs; without it every such
// lookup scans the whole collection). FerretDB's own log goes to a file in the data directory
// (OpenLog), away from the terminal of whoever runs msggate.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/alicebob/miniredis/v2"
)

// StartFerretDB starts FerretDB in-process, storing data in SQLite files under
// dataDir/ferretdb so that it survives restarts, and listening on a random
// loopback port. The server runs until ctx is canceled or stop is called; stop
// waits for it to finish and is safe to call more than once. A nil logger means
// slog.Default().
func StartFerretDB(ctx context.Context, dataDir string, logger *slog.Logger) (uri string, stop func() error, err error) {
	return StartFerretDBOn(ctx, dataDir, "127.0.0.1:0", logger)
}

// StartFerretDBOn is StartFerretDB listening on addr: a fixed port lets a process that runs
// it be stopped and started again at the same address.
func StartFerretDBOn(ctx context.Context, dataDir, addr string, logger *slog.Logger) (uri string, stop func() error, err error) {
	dir, err := ferretDBDir(dataDir)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("create FerretDB data dir: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: addr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
	})
	if err != nil {
		return "", nil, fmt.Errorf("start FerretDB: %w", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()

	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	return f.MongoDBURI(), stop, nil
}

// StartRedis starts an in-memory Redis (miniredis) on a random loopback port
// and returns its redis:// URL and a function that stops it.
func StartRedis() (url string, stop func(), err error) {
	m, err := miniredis.Run()
	if err != nil {
		return "", nil, errors.Join(errors.New("start miniredis"), err)
	}
	return "redis://" + m.Addr() + "/0", m.Close, nil
}
