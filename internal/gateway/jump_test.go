package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/retention"
)

// Jumping into history: a page around a seq or a client message ID, and the seq at a send
// time, in both modes, over one conversation laid out alike: alice sends bob 999 messages,
// seq s sent at base+1000*s with client message ID "m<s>", except that every tenth comes from
// a device whose clock is 2.5 s slow (base+1000*s-2500); bob's seq 1000 reuses alice's ID
// "m500". Then alice revokes 300, bob deletes 301 for himself, 302 is deleted for everyone.

const jumpChunks = 10 // the conversation's 1000 seqs fill chunks 0..9

func jumpSendTime(base, seq int64) int64 {
	if seq%10 == 0 {
		return base + 1000*seq - 2500
	}
	return base + 1000*seq
}

func jumpClientMsgID(seq int64) string {
	if seq == 1000 {
		return "m500"
	}
	return fmt.Sprintf("m%d", seq)
}

const (
	aroundQuery = `query($c: ID!, $seq: Int64, $id: String, $before: Int64, $limit: Int) { conversation(id: $c) {
	history(aroundSeq: $seq, aroundClientMsgID: $id, beforeSeq: $before, limit: $limit) { hasMoreBefore hasMoreAfter messages { seq status } } } }`
	seqAtTimeQuery = `query($c: ID!, $t: Int64!, $d: TimeDirection) { conversation(id: $c) { seqAtTime(time: $t, direction: $d) } }`
)

type aroundAnswer struct {
	seqs          []int64
	statuses      []string
	before, after bool
	code          string
}

func around(g *gatewaytest.Gateway, token, conv string, vars map[string]any) aroundAnswer {
	g.T.Helper()
	vars["c"] = conv
	r := g.Post(token, aroundQuery, vars)
	if len(r.Errors) > 0 {
		code, _ := r.Errors[0].Extensions["code"].(string)
		return aroundAnswer{code: code}
	}
	var out historyJSON
	if err := json.Unmarshal(r.Data, &out); err != nil {
		g.T.Fatal(err)
	}
	a := aroundAnswer{before: out.Conversation.History.HasMoreBefore, after: out.Conversation.History.HasMoreAfter}
	for _, m := range out.Conversation.History.Messages {
		a.seqs, a.statuses = append(a.seqs, m.Seq), append(a.statuses, m.Status)
	}
	return a
}

// seqAt answers seqAtTime, -1 for null, and checks the chunk reads it cost: MongoDB finds on
// the chunk collection (one per chunk on FerretDB in msggate mode; one per step in OpenIM mode,
// which keeps no chunk), at most log2(chunks)+1.
func seqAt(g *gatewaytest.Gateway, token, conv string, at int64, dir string) int64 {
	g.T.Helper()
	g.Mongo.Reset()
	var out struct{ Conversation struct{ SeqAtTime *int64 } }
	g.Query(token, seqAtTimeQuery, map[string]any{"c": conv, "t": at, "d": dir}, &out)
	if n, bound := g.Mongo.Count("msg", "find"), int(math.Log2(jumpChunks))+1; n > bound {
		g.T.Errorf("seqAtTime(%d, %s): %d chunk finds, want at most %d", at, dir, n, bound)
	}
	if out.Conversation.SeqAtTime == nil {
		return -1
	}
	return *out.Conversation.SeqAtTime
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// checkJumps asserts what both modes answer alike over the layout above, before retention.
func checkJumps(t *testing.T, g *gatewaytest.Gateway, alice, bob, conv string, base int64) {
	t.Helper()
	g.Mongo.Reset()
	a := around(g, bob, conv, map[string]any{"seq": 500, "limit": 20})
	if !slices.Equal(a.seqs, seqRange(490, 509)) || !a.before || !a.after || a.code != "" {
		t.Errorf("around 500: %+v, want 490..509 with more on both sides", a)
	}
	if n := g.Mongo.Count("msg", "find"); n > 2 {
		t.Errorf("around 500 within two chunks: %d chunk finds, want at most 2", n)
	}
	if a := around(g, bob, conv, map[string]any{"seq": 301, "limit": 3}); !slices.Equal(a.statuses, []string{"REVOKED", "DELETED", "DELETED"}) || a.seqs[0] != 300 {
		t.Errorf("around 301 for bob: %+v, want 300 REVOKED, 301 and 302 DELETED", a)
	}
	if a := around(g, alice, conv, map[string]any{"seq": 301, "limit": 3}); !slices.Equal(a.statuses, []string{"REVOKED", "OK", "DELETED"}) {
		t.Errorf("around 301 for alice: %+v, want 301 OK (bob deleted it for himself only)", a)
	}
	if a := around(g, bob, conv, map[string]any{"seq": 999, "limit": 20}); !slices.Equal(a.seqs, seqRange(981, 1000)) || a.after || !a.before {
		t.Errorf("around 999: %+v, want 981..1000, nothing after", a)
	}
	// Continuing from either end.
	if a := around(g, bob, conv, map[string]any{"before": 490, "limit": 5}); !slices.Equal(a.seqs, seqRange(485, 489)) {
		t.Errorf("page before the around page: %+v", a)
	}
	for what, vars := range map[string]map[string]any{
		"aroundSeq with beforeSeq": {"seq": 500, "before": 600},
		"both around arguments":    {"seq": 500, "id": "m500"},
	} {
		if a := around(g, bob, conv, vars); a.code != "BAD_USER_INPUT" {
			t.Errorf("%s: %+v, want BAD_USER_INPUT", what, a)
		}
	}
	if a := around(g, bob, conv, map[string]any{"seq": 1001}); a.code != "NOT_FOUND" {
		t.Errorf("around a seq not written yet: %+v, want NOT_FOUND", a)
	}

	// The same from the conversation list, whose nodes are written by their own writer.
	var list struct {
		Viewer struct {
			Conversations struct {
				Nodes []struct {
					ID        string
					SeqAtTime *int64
					History   struct{ Messages []gatewaytest.Message }
				}
			}
		}
	}
	g.Query(bob, `query($t: Int64!) { viewer { conversations { nodes { id seqAtTime(time: $t, direction: AT_OR_BEFORE)
		history(aroundSeq: 500, limit: 3) { messages { seq } } } } } }`, map[string]any{"t": base + 555_500}, &list)
	if ns := list.Viewer.Conversations.Nodes; len(ns) != 1 || ns[0].SeqAtTime == nil || *ns[0].SeqAtTime != 555 ||
		len(ns[0].History.Messages) != 3 || ns[0].History.Messages[1].Seq != 500 {
		t.Errorf("conversation list: %+v, want seqAtTime 555 and a page 499..501", ns)
	}

	for _, tc := range []struct {
		what   string
		token  string
		at     int64
		dir    string
		want   int64
		reason string
	}{
		{"exact", bob, base + 555_000, "AT_OR_AFTER", 555, ""},
		{"exact", bob, base + 555_000, "AT_OR_BEFORE", 555, ""},
		{"between", bob, base + 555_500, "AT_OR_AFTER", 556, ""},
		{"between", bob, base + 555_500, "AT_OR_BEFORE", 555, ""},
		{"deleted for everyone", bob, base + 302_000, "AT_OR_AFTER", 303, "302 is deleted"},
		{"deleted for bob", bob, base + 302_000, "AT_OR_BEFORE", 300, "301 is deleted for bob, 300 revoked still counts"},
		{"deleted for bob only", alice, base + 302_000, "AT_OR_BEFORE", 301, ""},
		// Seq 20 was sent at base+17500, between 17 and 18: the answer's neighbour on the other
		// side never satisfies the direction (17 at or after, 21 at or before).
		{"skew", bob, base + 17_500, "AT_OR_AFTER", 18, "the first at or after whose predecessor is before"},
		{"skew", bob, base + 17_500, "AT_OR_BEFORE", 20, "the last at or before whose successor is after"},
		{"before all", bob, base, "AT_OR_AFTER", 1, ""},
		{"before all", bob, base, "AT_OR_BEFORE", -1, ""},
		{"after all", bob, base + 2_000_000, "AT_OR_AFTER", -1, ""},
		{"after all", bob, base + 2_000_000, "AT_OR_BEFORE", 1000, ""},
	} {
		if got := seqAt(g, tc.token, conv, tc.at, tc.dir); got != tc.want {
			t.Errorf("seqAtTime %s (%s): %d, want %d %s", tc.what, tc.dir, got, tc.want, tc.reason)
		}
	}
}

// checkJumpsAfterRetention asserts what both modes answer once the conversation's min seq is
// minSeq: the history below it is gone.
func checkJumpsAfterRetention(t *testing.T, g *gatewaytest.Gateway, bob, conv string, base, minSeq int64) {
	t.Helper()
	if a := around(g, bob, conv, map[string]any{"seq": minSeq - 1}); a.code != "HISTORY_UNAVAILABLE" {
		t.Errorf("around a seq below the min seq: %+v, want HISTORY_UNAVAILABLE", a)
	}
	if a := around(g, bob, conv, map[string]any{"seq": minSeq + 1, "limit": 10}); len(a.seqs) == 0 || a.seqs[0] != minSeq || a.before {
		t.Errorf("around the min seq: %+v, want a page from %d with nothing before", a, minSeq)
	}
	if got := seqAt(g, bob, conv, base, "AT_OR_AFTER"); got != minSeq {
		t.Errorf("seqAtTime before everything: %d, want the min seq %d", got, minSeq)
	}
	if got := seqAt(g, bob, conv, base+17_500, "AT_OR_BEFORE"); got != -1 {
		t.Errorf("seqAtTime at or before a time below the min seq: %d, want null", got)
	}
}

// Ensure msggate's own store answers pages around a seq and a client message ID, and the seq
// at a time, by the rules of every page: per-user view, revoked, deleted, skew, retention.
func TestJumpIntoHistory(t *testing.T) {
	t.Parallel()
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	const conv = "si_alice_bob"
	now := time.Now()
	base := now.Add(-40 * 24 * time.Hour).UnixMilli()
	for from := int64(1); from <= 1000; from += 100 {
		var msgs []*im.Message
		for s := from; s < from+100; s++ {
			m := &im.Message{SendID: "alice", RecvID: "bob", ContentType: 101, Content: fmt.Sprintf("m%d", s),
				ClientMsgID: jumpClientMsgID(s), SendTime: jumpSendTime(base, s)}
			if s == 1000 {
				m.SendID, m.RecvID = "bob", "alice"
			}
			msgs = append(msgs, m)
		}
		if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	g.Query(alice, revokeMutation, map[string]any{"c": conv, "s": 300}, &struct{}{})
	g.Query(bob, deleteMutation, map[string]any{"c": conv, "s": []int64{301}}, &struct{}{})
	g.Query(alice, deleteMutation, map[string]any{"c": conv, "s": []int64{302}, "all": true}, &struct{}{})

	checkJumps(t, g, alice, bob, conv, base)

	// By client message ID: the newest message with it that the viewer can read.
	for _, tc := range []struct {
		token, id string
		at        int64
		code      string
	}{
		{token: bob, id: "m777", at: 777},
		{token: bob, id: "m300", at: 300},                   // revoked: still a place to jump to
		{token: bob, id: "m500", at: 1000},                  // bob's own, the newest with the ID
		{token: bob, id: "m301", code: "NOT_FOUND"},         // deleted for bob
		{token: alice, id: "m301", at: 301},                 // not for alice
		{token: alice, id: "m302", code: "NOT_FOUND"},       // deleted for everyone
		{token: alice, id: "no such id", code: "NOT_FOUND"}, // never sent
	} {
		g.Mongo.Reset()
		a := around(g, tc.token, conv, map[string]any{"id": tc.id, "limit": 5})
		if tc.code != "" {
			if a.code != tc.code {
				t.Errorf("around %q: %+v, want %s", tc.id, a, tc.code)
			}
			continue
		}
		if len(a.seqs) == 0 || !slices.Contains(a.seqs, tc.at) || a.seqs[len(a.seqs)-1] != min(tc.at+2, 1000) {
			t.Errorf("around %q: %+v, want a page centred on %d", tc.id, a, tc.at)
		}
		if n := g.Mongo.Count("msg", "find"); n > 2 {
			t.Errorf("around %q: %d chunk finds, want at most 2", tc.id, n)
		}
	}
	// bob deletes his m500 for himself: alice's is the one he can read.
	g.Query(bob, deleteMutation, map[string]any{"c": conv, "s": []int64{1000}}, &struct{}{})
	if a := around(g, bob, conv, map[string]any{"id": "m500", "limit": 5}); !slices.Equal(a.seqs, seqRange(498, 502)) {
		t.Errorf("around m500 once bob deleted his own: %+v, want alice's, 498..502", a)
	}

	// Retention: every message so far is 40 days old; ten recent ones follow.
	var recent []*im.Message
	for i := range 10 {
		recent = append(recent, &im.Message{SendID: "alice", RecvID: "bob", ContentType: 101, Content: "recent",
			ClientMsgID: fmt.Sprintf("r%d", i), SendTime: now.UnixMilli() + int64(i)})
	}
	if _, err := g.Ingest.Ingest(context.Background(), recent); err != nil {
		t.Fatal(err)
	}
	job := retention.New(g.Store, g.Cache, g.Ledger, retention.Options{MaxAge: 30 * 24 * time.Hour, Now: func() time.Time { return now }})
	if _, err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkJumpsAfterRetention(t, g, bob, conv, base, 1001)
	if a := around(g, alice, conv, map[string]any{"id": "m777"}); a.code != "HISTORY_UNAVAILABLE" {
		t.Errorf("around a client message ID below the min seq: %+v, want HISTORY_UNAVAILABLE", a)
	}
}

// Ensure OpenIM mode answers the same from OpenIM's chunks, read-only, and refuses pages around
// a client message ID (OpenIM keeps no index of them) with UNSUPPORTED.
func TestOpenIMJumpIntoHistory(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	conv := openimtest.SingleConversationID("alice", "bob")
	base := int64(1_700_000_000_000)
	var msgs []*openimtest.MsgData
	for s := int64(1); s <= 1000; s++ {
		from, to := "alice", "bob"
		if s == 1000 {
			from, to = "bob", "alice"
		}
		m := openimtest.Single(from, to, openimtest.ContentText, openimtest.TextContent(fmt.Sprintf("m%d", s)))
		m.ClientMsgID, m.SendTime = jumpClientMsgID(s), jumpSendTime(base, s)
		msgs = append(msgs, m)
	}
	g.IM.Send(conv, msgs...)
	g.IM.Revoke(conv, 300, openimtest.Revoke{Role: 0, UserID: "alice", Nickname: "Alice"})
	g.IM.DeleteForMe(conv, "bob", 301)
	g.IM.DeleteForEveryone(conv, 302)
	alice, bob := g.IM.Login("alice", 1, 7), g.IM.Login("bob", 1, 7)
	before := g.IM.Snapshot()

	checkJumps(t, g.Gateway, alice, bob, conv, base)
	if a := around(g.Gateway, bob, conv, map[string]any{"id": "m777"}); a.code != "UNSUPPORTED" {
		t.Errorf("around a client message ID in OpenIM mode: %+v, want UNSUPPORTED", a)
	}
	if diff := openimtest.Diff(before, g.IM.Snapshot()); len(diff) != 0 {
		t.Errorf("the reads changed OpenIM's stores: %v", diff)
	}

	g.IM.SetMinSeq(conv, 701)
	checkJumpsAfterRetention(t, g.Gateway, bob, conv, base, 701)
}
