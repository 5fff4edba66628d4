package cli_test

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// startServe runs `msggate serve` on the embedded default in dir, as `go run .` does (with
// the flags extra besides), and returns a client for it, the demo token it printed, and a
// function that stops it.
func startServe(t *testing.T, dir string, extra ...string) (*gatewaytest.Gateway, string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Serve(ctx, append([]string{"-addr", "127.0.0.1:0", "-data-dir", dir}, extra...), pw, io.Discard)
		pw.Close()
	}()
	listen := regexp.MustCompile(`listening on (http://\S+)/query`)
	demo := regexp.MustCompile(`demo token for alice \(24h\): (\S+)`)
	var url, token string
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(3 * time.Minute)
	for url == "" || token == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("serve stopped: %v", <-done)
			}
			if m := listen.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
			if m := demo.FindStringSubmatch(line); m != nil {
				token = m[1]
			}
		case <-timeout:
			t.Fatal("serve did not print its address and demo token")
		}
	}
	go func() {
		for range lines { // keep draining so serve never blocks on its output
		}
	}()
	g := gatewaytest.Client(t, url)
	return g, token, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

// Ensure the embedded default starts with the demo data, that the demo token and example query
// it prints work, and that data and tokens survive a restart.
func TestEmbeddedDefaultSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	g, demoToken, stop := startServe(t, dir)
	var v gatewaytest.Viewer
	g.Query(demoToken, cli.DemoQuery, nil, &v)
	if len(v.Viewer.Conversations.Nodes) != 3 || v.Viewer.Conversations.Nodes[0].ID != "sg_friends" {
		t.Fatalf("the printed example query on a new store: %+v", v.Viewer)
	}
	if m := g.SendGQL(demoToken, map[string]any{"recvID": "erin", "contentType": 101, "content": "kept"}); m.Seq != 1 {
		t.Fatalf("first message to erin: %+v", m)
	}
	stop()

	g, _, stop = startServe(t, dir)
	defer stop()
	c := g.Conversation(demoToken, "si_alice_erin") // the token from before the restart still works
	if c.MaxSeq != 1 || c.LastMessage == nil || *c.LastMessage.Content != "kept" {
		t.Fatalf("after restart: %+v", c)
	}
	g.Query(demoToken, cli.DemoQuery, nil, &v)
	if n := len(v.Viewer.Conversations.Nodes); n != 4 || !strings.HasPrefix(v.Viewer.Conversations.Nodes[0].ID, "si_alice_erin") {
		t.Errorf("after restart the demo data is seeded once and erin's chat is newest: %+v", v.Viewer.Conversations.Nodes)
	}
}

// Ensure the embedded store, started new against a redis-server that holds another store's
// state (an earlier embedded store's, in another data directory), starts, adds the demo data
// and serves its own store only.
func TestEmbeddedDefaultOnAnotherStoresRedis(t *testing.T) {
	rs := testenv.Redis(t)
	g, demoToken, stop := startServe(t, t.TempDir(), "-redis-url", rs.URL())
	if m := g.SendGQL(demoToken, map[string]any{"recvID": "erin", "contentType": 101, "content": "other store"}); m.Seq != 1 {
		t.Fatalf("first message to erin: %+v", m)
	}
	stop()

	g, demoToken, stop = startServe(t, t.TempDir(), "-redis-url", rs.URL())
	defer stop()
	var v gatewaytest.Viewer
	g.Query(demoToken, cli.DemoQuery, nil, &v)
	if n := len(v.Viewer.Conversations.Nodes); n != 3 || v.Viewer.Conversations.Nodes[0].ID != "sg_friends" {
		t.Errorf("the demo data on the new store: %+v", v.Viewer.Conversations.Nodes)
	}
	if c := g.Conversation(demoToken, "sg_friends"); c.MaxSeq != 260 {
		t.Errorf("the demo group on the new store: maxSeq %d, want 260", c.MaxSeq)
	}
	if got := g.Statuses(demoToken, "sg_friends", 100, 101, 102); strings.Join(got, " ") != "OK REVOKED DELETED" {
		t.Errorf("demo group seqs 100-102: %v, want OK REVOKED DELETED", got)
	}
	if c := g.Conversation(demoToken, "si_alice_erin"); c.MaxSeq != 0 {
		t.Errorf("the other store's chat with erin: %+v", c)
	}
}
