package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
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
	if err == nil || !strings.Contains(err.Error(), "fanout") {
		t.Errorf("an unknown command: %v, want fanout among the commands", err)
	}
	// fanout refuses a group larger than a group may be before it starts anything.
	tooMany := strconv.Itoa(im.MaxGroupMembers + 1)
	err = run(context.Background(), []string{"fanout", "-devices", tooMany}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "members") {
		t.Errorf("fanout -devices %s: %v, want the group size refused", tooMany, err)
	}
}
