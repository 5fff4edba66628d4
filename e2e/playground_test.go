package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// documentation explorer and the Authorization hint in its Headers tab, takes a real token there,
// runs a query, and shows the message sent before.
// The page must not even try to reach another host (zero blocked requests) and must raise no
// script errors or content-security-policy violations.
func TestGraphiQLRunsAQueryOffline(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing; run ./scripts/test, which installs Debian's chromium", chromiumPath)
	}
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "hello from GraphiQL"})

	// The gateway as `msggate serve` runs it by default: GraphiQL on.
	g.Config.Playground = true
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)

	opts, _ := json.Marshal(map[string]string{
		"url":         srv.URL + "/",
		"token":       alice,
		"query":       `{ conversation(id: "si_alice_bob") { maxSeq lastMessage { content } } }`,
		"expect":      "hello from GraphiQL",
		"userDataDir": filepath.Join(t.TempDir(), "chromium-profile"),
	})
	var run graphiqlRun
	out := runE2E(t, "graphiql.mjs", string(opts))
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("graphiql.mjs printed %q: %v", out, err)
	}
	if run.FailedAt != "" {
		t.Fatalf("driving GraphiQL failed at %q: %s\npage errors: %q\nconsole errors: %q\nblocked: %q",
			run.FailedAt, run.Error, run.PageErrors, run.ConsoleErrors, run.Blocked)
	}

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
