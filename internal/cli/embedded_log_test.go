package cli_test

import (
	"bytes"
	"context"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/embedded"
)

// Ensure a command run on the embedded store prints only its own output: FerretDB's log (WARN
// dumps of every reply to the driver's endSessions, among others) goes to the log file in the
// data directory, not to the command's stdout or stderr, nor to the process's own (where
// slog.Default and a stray print would go).
func TestEmbeddedStoreLogsToItsFile(t *testing.T) {
	dir := t.TempDir()
	process := filepath.Join(t.TempDir(), "process-output")
	f, err := os.Create(process)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout, stderr, logOut := os.Stdout, os.Stderr, log.Writer()
	os.Stdout, os.Stderr = f, f
	log.SetOutput(f)
	var out, errb bytes.Buffer
	err = cli.Group(context.Background(), []string{"-data-dir", dir, "-id", "book-club", "-members", "alice:owner,bob"}, &out, &errb)
	os.Stdout, os.Stderr = stdout, stderr
	log.SetOutput(logOut)
	if err != nil {
		t.Fatalf("group: %v\n%s", err, errb.String())
	}

	if got, want := out.String(), "group book-club now has 2 members\n"; got != want {
		t.Errorf("stdout %q, want only %q", got, want)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr holds %q, want nothing", errb.String())
	}
	if b, _ := os.ReadFile(process); len(b) > 0 {
		t.Errorf("the process's own stdout and stderr got %q, want nothing", b)
	}
	logged, err := os.ReadFile(filepath.Join(dir, embedded.LogFileName))
	if err != nil {
		t.Fatalf("the embedded store's log file: %v", err)
	}
	t.Logf("%s holds %d bytes", embedded.LogFileName, len(logged))
}
