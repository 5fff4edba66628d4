package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure `msggate sync-client -user U` mints its token from the secret, bootstraps, prints the
// events it applies live until interrupted, then prints its replica and what it cost.
func TestSyncClientCommand(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 2)
	var stdout, stderr testenv.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- cli.SyncClient(ctx, []string{"-user", "alice", "-url", g.URL, "-secret", g.Config.JWTSecret}, &stdout, &stderr)
	}()
	waitForOutput := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(stdout.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the output:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitForOutput("subscribed to syncEvents")
	g.Send("bob", "alice", "", 1)
	waitForOutput("NEW_MESSAGE si_alice_bob seq 3 from bob")
	waitForOutput("fetched 1 messages")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("sync-client: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"bootstrapped at",
		"replica of alice at",
		"si_alice_bob                     maxSeq 3 minSeq 1 readSeq 0 unread 3, 2 messages held",
		"HTTP requests: Messages 1, SyncDifference 1, SyncState 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
	if strings.Contains(out, "INVARIANT") {
		t.Errorf("invariant violated:\n%s", out)
	}
}

// Ensure sync-client refuses to guess a secret: with neither a token nor a secret it names
// what to pass instead of generating a secret the gateway would not know.
func TestSyncClientCommandNeedsAToken(t *testing.T) {
	t.Setenv("MSGGATE_JWT_SECRET", "")
	err := cli.SyncClient(context.Background(), []string{"-user", "alice", "-data-dir", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "pass -token, -secret") {
		t.Fatalf("got %v, want an error naming -token and -secret", err)
	}
}
