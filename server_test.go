package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
)

// Ensure run hands the arguments after the command's name to that command, and names the
// commands when given one it does not know.
func TestRunPicksTheCommand(t *testing.T) {
	t.Setenv(gateway.EnvJWTSecret, "")
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "-user", "alice", "-data-dir", dir}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	secret, err := gateway.JWTSecret(gateway.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := auth.Verify(secret, strings.TrimSpace(out.String())); err != nil || v.UserID != "alice" || v.Admin {
		t.Errorf("token -user alice printed %q: %+v, %v", out.String(), v, err)
	}

	err = run(context.Background(), []string{"tokens"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `unknown command "tokens"`) || !strings.Contains(err.Error(), "sync-client") {
		t.Errorf("an unknown command: %v, want an error naming the commands", err)
	}
	// The developer tools moved out of the product binary; their old names say where to.
	err = run(context.Background(), []string{"fanout", "-devices", "10"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "go run ./cmd/fanout") {
		t.Errorf("fanout: %v, want the way to the tool", err)
	}
}
