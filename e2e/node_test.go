package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeCommand prepares one of the Node scripts in this directory to run under ctx. A missing node
// or node_modules (or the module the script needs) fails the test: ./scripts/test installs
// them.
func nodeCommand(t *testing.T, ctx context.Context, module, script string, args ...string) *exec.Cmd {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed; run ./scripts/test, which installs the end-to-end tooling")
	}
	// The test runs in this directory, which holds the scripts and their package.json.
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", module)); err != nil {
		t.Fatalf("%s/node_modules lacks %s; run ./scripts/test (it runs npm ci there)", dir, module)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runE2E runs one of the Node scripts in this directory with the given arguments and returns its
// stdout.
func runE2E(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := nodeCommand(t, ctx, ".package-lock.json", script, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Logf("node %s stderr:\n%s", script, s)
	}
	return stdout.Bytes()
}

// startNodeScript starts one of the Node scripts in this directory with piped stdin and a channel of
// its stdout lines; the process is killed when the test ends.
func startNodeScript(t *testing.T, script string, args ...string) (stdin io.WriteCloser, lines <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := nodeCommand(t, ctx, "graphql-ws", script, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			t.Logf("node %s stderr:\n%s", script, s)
		}
	})
	return stdin, out
}
