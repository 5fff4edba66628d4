package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/retention"
)

// sendAt ingests n messages from sender with the given send time (ms), as an import of older
// history does: sendMessage always stamps the current time.
func sendAt(g *gatewaytest.Gateway, sender, recvID, groupID string, n int, sendTime int64) {
	g.T.Helper()
	msgs := make([]*im.Message, n)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: sender, RecvID: recvID, GroupID: groupID, ContentType: 101,
			Content: fmt.Sprintf("at %d #%d", sendTime, i), SendTime: sendTime}
	}
	if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
		g.T.Fatal(err)
	}
}

// chunksExist reports which chunks 0..n-1 of a conversation are in MongoDB, as "- 1".
func chunksExist(g *gatewaytest.Gateway, conv string, n int64) string {
	g.T.Helper()
	cs, err := g.Store.FindChunkRange(context.Background(), conv, 0, n-1)
	if err != nil {
		g.T.Fatal(err)
	}
	var out []string
	for i, c := range cs {
		if c == nil {
			out = append(out, "-")
		} else {
			out = append(out, fmt.Sprint(i))
		}
	}
	return strings.Join(out, " ")
}

// historyUnavailable asserts that a read fails with HISTORY_UNAVAILABLE naming minSeq.
func historyUnavailable(g *gatewaytest.Gateway, what, token, query string, vars map[string]any, minSeq int64) {
	g.T.Helper()
	r := g.Post(token, query, vars)
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "HISTORY_UNAVAILABLE" || r.Errors[0].Extensions["minSeq"] != float64(minSeq) {
		g.T.Errorf("%s: want HISTORY_UNAVAILABLE with minSeq %d, got errors %+v, data %s", what, minSeq, r.Errors, r.Data)
	}
}

const historyQuery = `query($c: ID!, $before: Int64, $after: Int64, $limit: Int) { conversation(id: $c) {
	history(beforeSeq: $before, afterSeq: $after, limit: $limit) { hasMoreBefore hasMoreAfter messages { seq status content } } } }`

type historyJSON struct {
	Conversation struct {
		History struct {
			HasMoreBefore, HasMoreAfter bool
			Messages                    []gatewaytest.Message
		}
	}
}

// Ensure the retention job, run on a gateway's stores with a fixed clock, deletes exactly the
// chunks whose every message is old, keeps the chunk that holds one recent message, moves
// minSeq, shrinks unread counts (never below zero), tells the members' devices (CLEAR), and
// that reads below minSeq answer HISTORY_UNAVAILABLE while newer messages still read; and
// that `msggate retention -days N` does the same once.
func TestRetention(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	now := time.Now()
	old, recent := now.Add(-40*24*time.Hour).UnixMilli(), now.Add(-time.Hour).UnixMilli()

	// si_alice_bob: 1..150 old, 151 recent (in chunk 1 with 101..150). bob read up to 50.
	sendAt(g, "alice", "bob", "", 150, old)
	sendAt(g, "alice", "bob", "", 1, recent)
	g.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob", readSeq: 50) { readSeq } }`, nil, &struct{}{})
	// sg_team: 1..120, all old, so even the chunk holding the max seq goes.
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}}}, &struct{}{})
	sendAt(g, "alice", "", "team", 120, old)
	// Warm the chunk cache for both, as earlier reads would have.
	var h historyJSON
	g.Query(bob, historyQuery, map[string]any{"c": "sg_team", "limit": 30}, &h)
	g.Statuses(bob, "si_alice_bob", 1, 151)
	if c := g.Conversation(bob, "si_alice_bob"); c.UnreadCount != 101 {
		t.Fatalf("bob's unread before retention: %+v", c)
	}
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)

	job := retention.New(g.Store, g.Cache, g.Ledger, retention.Options{MaxAge: 30 * 24 * time.Hour, Now: func() time.Time { return now }})
	sum, err := job.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Conversations != 2 || sum.ChunksDeleted != 3 || sum.MinSeqsRaised != 2 {
		t.Fatalf("summary: %+v", sum)
	}
	if got := chunksExist(g, "si_alice_bob", 2); got != "- 1" {
		t.Errorf("si_alice_bob chunks in MongoDB: %s, want chunk 0 gone and chunk 1 (one recent message) kept", got)
	}
	if got := chunksExist(g, "sg_team", 2); got != "- -" {
		t.Errorf("sg_team chunks in MongoDB: %s, want both gone", got)
	}

	// Seq state: minSeq moved past the old messages; unread counts shrank, never negative.
	for _, tc := range []struct {
		token, conv, who string
		want             gatewaytest.Conversation
	}{
		{bob, "si_alice_bob", "bob", gatewaytest.Conversation{MaxSeq: 151, MinSeq: 151, ReadSeq: 50, UnreadCount: 1}},
		{alice, "si_alice_bob", "alice", gatewaytest.Conversation{MaxSeq: 151, MinSeq: 151, ReadSeq: 151, UnreadCount: 0}},
		{bob, "sg_team", "bob", gatewaytest.Conversation{MaxSeq: 120, MinSeq: 121, ReadSeq: 0, UnreadCount: 0}},
	} {
		c := g.Conversation(tc.token, tc.conv)
		if c.MaxSeq != tc.want.MaxSeq || c.MinSeq != tc.want.MinSeq || c.ReadSeq != tc.want.ReadSeq || c.UnreadCount != tc.want.UnreadCount {
			t.Errorf("%s in %s: %+v, want %+v", tc.who, tc.conv, c, tc.want)
		}
	}
	// Devices learn it from the event log.
	var cleared bool
	for _, ev := range difference(g, bob, st.SyncState.Token, 100).SyncDifference.Events {
		if ev.Type == "CLEAR" && ev.ConversationID != nil && *ev.ConversationID == "si_alice_bob" &&
			ev.MinSeq != nil && *ev.MinSeq == 151 && ev.UnreadCount != nil && *ev.UnreadCount == 1 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("bob's devices got no CLEAR event with minSeq 151 and unreadCount 1")
	}

	// Reads below minSeq say the history is gone; reads from minSeq on work.
	historyUnavailable(g, "messages below minSeq", bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{151, 150}}, 151)
	historyUnavailable(g, "history before minSeq", bob, historyQuery, map[string]any{"c": "si_alice_bob", "before": 151}, 151)
	historyUnavailable(g, "history between two seqs below minSeq", bob, historyQuery, map[string]any{"c": "si_alice_bob", "before": 100, "after": 10}, 151)
	historyUnavailable(g, "sg_team below minSeq", bob, gatewaytest.MessagesQuery, map[string]any{"c": "sg_team", "s": []int64{1}}, 121)
	var out struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{151, 152}}, &out)
	if len(out.Messages) != 1 || out.Messages[0].Status != "OK" || !strings.HasPrefix(*out.Messages[0].Content, fmt.Sprintf("at %d", recent)) {
		t.Errorf("the recent message: %+v (seq 152 above maxSeq is left out)", out.Messages)
	}
	g.Query(bob, historyQuery, map[string]any{"c": "si_alice_bob"}, &h)
	if m := h.Conversation.History.Messages; len(m) != 1 || m[0].Seq != 151 || m[0].Status != "OK" || h.Conversation.History.HasMoreBefore {
		t.Errorf("newest history after retention: %+v", h.Conversation.History)
	}

	// The group's next message lands in a new chunk 1 and reads as usual.
	g.SendGQL(alice, map[string]any{"groupID": "team", "contentType": 101, "content": "after retention"})
	g.Query(bob, historyQuery, map[string]any{"c": "sg_team"}, &h)
	if m := h.Conversation.History.Messages; len(m) != 1 || m[0].Seq != 121 || *m[0].Content != "after retention" {
		t.Errorf("sg_team after a new message: %+v", h.Conversation.History)
	}
	if c := g.Conversation(bob, "sg_team"); c.UnreadCount != 1 || c.MinSeq != 121 {
		t.Errorf("bob in sg_team after a new message: %+v", c)
	}

	// The one-shot subcommand, on the real clock.
	sendAt(g, "carol", "bob", "", 5, old)
	if err := cli.Retention(context.Background(), g.StoreFlags(), &strings.Builder{}, &strings.Builder{}); err == nil {
		t.Error("retention without -days ran")
	}
	var stdout, stderr strings.Builder
	if err := cli.Retention(context.Background(), append(g.StoreFlags(), "-days", "30"), &stdout, &stderr); err != nil {
		t.Fatalf("retention -days 30: %v\n%s", err, stderr.String())
	}
	if want := "3 conversations scanned, 1 chunks deleted, 1 min seqs raised"; !strings.Contains(stdout.String(), want) {
		t.Errorf("summary %q, want it to say %q", stdout.String(), want)
	}
	if c := g.Conversation(bob, "si_bob_carol"); c.MinSeq != 6 || c.UnreadCount != 0 || chunksExist(g, "si_bob_carol", 1) != "-" {
		t.Errorf("si_bob_carol after the subcommand: %+v", c)
	}
}

// Ensure the retention settings come from flags and the environment, and bad values stop the
// start instead of switching retention off.
func TestRetentionConfig(t *testing.T) {
	parse := func(args ...string) gateway.RetentionConfig {
		t.Helper()
		var c gateway.Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c.Retention
	}
	if c := parse(); c.Days != 0 || c.Interval != retention.DefaultInterval {
		t.Errorf("defaults: %+v", c)
	}
	if age, err := parse().MaxAge(); age != 0 || err != nil {
		t.Errorf("off by default: %v, %v", age, err)
	}
	t.Setenv("MSGGATE_RETENTION_DAYS", "7")
	t.Setenv("MSGGATE_RETENTION_INTERVAL", "10m")
	if c := parse(); c.Days != 7 || c.Interval != 10*time.Minute {
		t.Errorf("from the environment: %+v", c)
	}
	if c := parse("-retention-days", "3"); c.Days != 3 {
		t.Errorf("the flag wins: %+v", c)
	}
	if age, err := parse("-retention-days", "3").MaxAge(); age != 72*time.Hour || err != nil {
		t.Errorf("3 days: %v, %v", age, err)
	}
	if _, err := parse("-retention-days", "-1").MaxAge(); err == nil {
		t.Error("negative days accepted")
	}
	t.Setenv("MSGGATE_RETENTION_DAYS", "seven")
	if _, err := parse().MaxAge(); err == nil || !strings.Contains(err.Error(), "MSGGATE_RETENTION_DAYS") {
		t.Errorf("a malformed environment value: %v", err)
	}
}
