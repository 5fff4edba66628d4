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
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// Ensure `msggate serve` in OpenIM mode, following OpenIM's Kafka with a new search index,
// fills the index from OpenIM's history in the background: a message OpenIM stored before
// the gateway started, whose record never reached msggate, is found by a search, for its
// reader and not for a user outside the chat; and the deployment is left as it was.
func TestServeOpenIMFillsANewIndexFromHistory(t *testing.T) {
	d := gatewaytest.StartOpenIM(t, nil)
	conv := openimtest.SingleConversationID("alice", "bob")
	d.IM.Send(conv,
		openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("an old note about the harbour")),
		openimtest.Single("bob", "alice", openimtest.ContentText, openimtest.TextContent("昨天的港口会议记录")))
	bob, carol := d.IM.Login("bob", 2, 7), d.IM.Login("carol", 2, 7)
	before := d.IM.Snapshot()
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- cli.Serve(ctx, []string{"-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), "-openim",
			"-mongo-uri", d.Config.MongoURI, "-mongo-db", d.Config.MongoDatabase, "-openim-redis-url", d.Config.OpenIM.RedisURL,
			"-openim-secret", d.IM.Secret, "-redis-url", d.Config.RedisURL, "-openim-kafka", strings.Join(brokers, ",")}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	listen := regexp.MustCompile(`listening on (http://\S+)/query`)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listen.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var g *gatewaytest.Gateway
	select {
	case url := <-urls:
		g = gatewaytest.Client(t, url)
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("serve did not print its address")
	}

	const query = `query($q: String!) { search(query: $q) { hits { message { conversationID seq content } } count } }`
	type result struct {
		Search struct {
			Hits []struct {
				Message struct {
					ConversationID string `json:"conversationID"`
					Seq            int64  `json:"seq"`
				} `json:"message"`
			} `json:"hits"`
			Count int `json:"count"`
		} `json:"search"`
	}
	search := func(token, q string) result {
		var r result
		g.Query(token, query, map[string]any{"q": q}, &r)
		return r
	}
	for _, q := range []string{"harbour", "港口"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := search(bob, q)
			if len(r.Search.Hits) == 1 && r.Search.Hits[0].Message.ConversationID == conv && r.Search.Count == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bob searching %q finds %+v 30 s after the gateway started: OpenIM's history was not indexed", q, r.Search)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if r := search(carol, "harbour"); len(r.Search.Hits) != 0 || r.Search.Count != 0 {
		t.Errorf("carol, not in the chat, finds %+v", r.Search)
	}
	if diff := openimtest.Diff(before, d.IM.Snapshot()); len(diff) > 0 {
		t.Errorf("serving changed the deployment:\n%s", strings.Join(diff, "\n"))
	}
}
