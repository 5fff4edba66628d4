package embedded

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// LogFileName is the file in the data directory that holds the embedded FerretDB's own log.
// FerretDB logs at WARN what is routine for msggate (a full dump of every reply to the driver's
// endSessions, which it does not implement), and those dumps are no business of the terminal of
// someone who ran a command: they go to this file, kept for whoever debugs the store.
const LogFileName = "ferretdb.log"

// OpenLog creates dataDir/LogFileName, emptied so that it holds the current run only, and
// returns a logger of FerretDB's warnings and errors into it, for StartFerretDB, and a function
// that closes the file once FerretDB has stopped.
func OpenLog(dataDir string) (logger *slog.Logger, closeLog func() error, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, LogFileName), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open the embedded store's log: %w", err)
	}
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn})), f.Close, nil
}
