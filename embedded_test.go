package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Ensure the embedded default (in-process FerretDB on SQLite, in-process Redis) serves
// GraphQL, keeps its data and its JWT secret across a restart, and that `token` prints a token
// the running gateway accepts.
func TestEmbeddedDefaultSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*gateway, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		m, err := Open(ctx, Config{DataDir: dir, MongoDatabase: "msggate", Addr: "127.0.0.1:0", LogOutput: io.Discard},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- m.Serve(ctx, func(addr string) { ready <- addr }) }()
		var addr string
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatal(err)
		case <-time.After(time.Minute):
			t.Fatal("gateway did not start")
		}
		return &gateway{t: t, m: m, url: "http://" + addr}, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	tokenFor := func(user string) string {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"token", "-user", user, "-data-dir", dir}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}

	g, stop := start()
	alice := tokenFor("alice")
	if m := g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "kept"}); m.Seq != 1 {
		t.Fatalf("first message: %+v", m)
	}
	stop()

	g, stop = start()
	defer stop()
	c := g.conversation(alice, "si_alice_bob") // the token from before the restart still works
	if c.MaxSeq != 1 || c.LastMessage == nil || *c.LastMessage.Content != "kept" {
		t.Fatalf("after restart: %+v", c)
	}
	if m := g.sendGQL(tokenFor("bob"), map[string]any{"recvID": "alice", "contentType": 101, "content": "next"}); m.Seq != 2 {
		t.Fatalf("first message after restart got seq %d, want 2", m.Seq)
	}
}
