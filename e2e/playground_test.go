package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// chromiumPath is Debian's chromium package, which ./scripts/test installs.
const chromiumPath = "/usr/bin/chromium"

// graphiqlRun is what graphiql.mjs reports.
type graphiqlRun struct {
	DocsText         string   `json:"docsText"`
	ResultText       string   `json:"resultText"`
	HeadersHint      string   `json:"headersHint"`
	HeadersText      string   `json:"headersText"`
	QueryText        string   `json:"queryText"`
	Blocked          []string `json:"blocked"`
	LoopbackRequests int      `json:"loopbackRequests"`
	ConsoleErrors    []string `json:"consoleErrors"`
	PageErrors       []string `json:"pageErrors"`
	FailedAt         string   `json:"failedAt"`
	Error            string   `json:"error"`
}

// Ensure a person can use GraphiQL on a machine without internet: in headless Chromium with
// every non-loopback request blocked, the page served at / loads, shows the schema in its
// documentation explorer and the Authorization hint in its Headers tab (with no token: this
// gateway's store is not the embedded default's demo), takes a real token there,
// runs a query, and shows the message sent before.
// The page must not even try to reach another host (zero blocked requests) and must raise no
// script errors or content-security-policy violations.
func TestGraphiQLRunsAQueryOffline(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "hello from GraphiQL"})

	// The gateway as `msggate serve` runs it by default: GraphiQL on.
	g.Config.Playground = true
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)

	run := driveGraphiQL(t, map[string]string{
		"url":    srv.URL + "/",
		"token":  alice,
		"query":  `{ conversation(id: "si_alice_bob") { maxSeq lastMessage { content } } }`,
		"expect": "hello from GraphiQL",
	})

	if !strings.Contains(run.DocsText, "query: Query") || !strings.Contains(run.DocsText, "Conversation") {
		t.Errorf("the documentation explorer does not show the schema: %q", run.DocsText)
	}
	if !strings.Contains(run.HeadersHint, `"Authorization": "Bearer "`) {
		t.Errorf("the Headers tab does not start with the Authorization hint: %q", run.HeadersHint)
	}
	if !strings.Contains(run.HeadersText, alice) || !strings.Contains(run.QueryText, "si_alice_bob") {
		t.Errorf("the editors did not take the input: headers %q, query %q", run.HeadersText, run.QueryText)
	}
	var shown struct {
		Data struct {
			Conversation struct {
				MaxSeq      int64
				LastMessage struct{ Content string }
			}
		}
		Errors []gatewaytest.Error
	}
	if err := json.Unmarshal([]byte(run.ResultText), &shown); err != nil {
		t.Fatalf("the result pane does not show a GraphQL response: %v\n%s", err, run.ResultText)
	}
	if c := shown.Data.Conversation; len(shown.Errors) > 0 || c.MaxSeq != 1 || c.LastMessage.Content != "hello from GraphiQL" {
		t.Errorf("the result pane shows %s, want maxSeq 1 and the message sent", run.ResultText)
	}

	if len(run.Blocked) > 0 {
		t.Errorf("the page tried to reach %d non-loopback URLs: %q", len(run.Blocked), run.Blocked)
	}
	if run.LoopbackRequests < 6 {
		t.Errorf("only %d requests reached the gateway; want the page, its 6 assets and the queries", run.LoopbackRequests)
	}
	for _, e := range append(run.PageErrors, run.ConsoleErrors...) {
		t.Errorf("browser error: %s", e)
	}
}

// driveGraphiQL runs graphiql.mjs with opts (and a fresh Chromium profile) and fails the test
// if a step could not be done.
func driveGraphiQL(t *testing.T, opts map[string]string) graphiqlRun {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing; run ./scripts/test, which installs Debian's chromium", chromiumPath)
	}
	opts["userDataDir"] = filepath.Join(t.TempDir(), "chromium-profile")
	arg, _ := json.Marshal(opts)
	var run graphiqlRun
	out := runE2E(t, "graphiql.mjs", string(arg))
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("graphiql.mjs printed %q: %v", out, err)
	}
	if run.FailedAt != "" {
		t.Fatalf("driving GraphiQL failed at %q: %s\npage errors: %q\nconsole errors: %q\nblocked: %q",
			run.FailedAt, run.Error, run.PageErrors, run.ConsoleErrors, run.Blocked)
	}
	return run
}

// Ensure a newcomer's first visit works as is: `msggate serve` on the embedded default (what
// `go run .` starts) opens GraphiQL with the demo token it printed in the Headers tab, and
// pressing the run button on the query the page shows returns the demo data, not
// UNAUTHENTICATED.
func TestGraphiQLOpensWithTheDemoToken(t *testing.T) {
	url, printed := serveEmbedded(t)
	run := driveGraphiQL(t, map[string]string{"url": url, "expect": "sg_friends"})

	var headers struct{ Authorization string }
	if err := json.Unmarshal([]byte(run.HeadersText), &headers); err != nil || headers.Authorization != "Bearer "+printed {
		t.Errorf("the Headers tab opened with %q (err %v), want the printed demo token %q", run.HeadersText, err, printed)
	}
	if !strings.Contains(run.QueryText, "viewer") {
		t.Errorf("the query editor opened with %q, want the viewer query", run.QueryText)
	}
	var shown struct {
		Data struct {
			Viewer struct {
				UserID        string
				Conversations struct{ Nodes []struct{ ID string } }
			}
		}
		Errors []gatewaytest.Error
	}
	if err := json.Unmarshal([]byte(run.ResultText), &shown); err != nil {
		t.Fatalf("the result pane does not show a GraphQL response: %v\n%s", err, run.ResultText)
	}
	if v := shown.Data.Viewer; len(shown.Errors) > 0 || v.UserID != cli.DemoUser || len(v.Conversations.Nodes) != 3 {
		t.Errorf("the result pane shows %s, want %s's three demo conversations", run.ResultText, cli.DemoUser)
	}
	if len(run.Blocked) > 0 {
		t.Errorf("the page tried to reach %d non-loopback URLs: %q", len(run.Blocked), run.Blocked)
	}
	for _, e := range append(run.PageErrors, run.ConsoleErrors...) {
		t.Errorf("browser error: %s", e)
	}
}

// serveEmbedded runs `msggate serve` on the embedded default in a new data directory until the
// test ends, and returns the GraphiQL URL and the demo token it printed.
func serveEmbedded(t *testing.T) (url, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Serve(ctx, []string{"-addr", "127.0.0.1:0", "-data-dir", t.TempDir()}, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	graphiql := regexp.MustCompile(`GraphiQL:\s+(http://\S+/)`)
	demo := regexp.MustCompile(`demo token for ` + cli.DemoUser + ` \(24h\): (\S+)`)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(3 * time.Minute)
	for url == "" || token == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("serve stopped before printing GraphiQL's URL and the demo token")
			}
			if m := graphiql.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
			if m := demo.FindStringSubmatch(line); m != nil {
				token = m[1]
			}
		case <-timeout:
			t.Fatal("serve did not print GraphiQL's URL and the demo token")
		}
	}
	go func() {
		for range lines { // keep draining so serve never blocks on its output
		}
	}()
	return url, token
}
