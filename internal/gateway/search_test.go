package gateway_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

const searchQuery = `query($q: String!, $c: ID, $s: String, $t: [Int!], $a: Int64, $b: Int64, $n: Int, $after: String) {
  search(query: $q, conversationID: $c, senderID: $s, contentTypes: $t, sentAfter: $a, sentBefore: $b, first: $n, after: $after) {
    hits { message { conversationID seq sendID content status } highlight }
    count countIsExact endCursor hasMore
  }
}`

type searchResults struct {
	Hits []struct {
		Message   gatewaytest.Message
		Highlight *string
	}
	Count        int
	CountIsExact bool
	EndCursor    *string
	HasMore      bool
}

// found runs a search and returns its hits as "conversation/seq", newest first.
func found(t *testing.T, g *gatewaytest.Gateway, token string, vars map[string]any) ([]string, searchResults) {
	t.Helper()
	var out struct{ Search searchResults }
	g.Query(token, searchQuery, vars, &out)
	var keys []string
	for _, h := range out.Search.Hits {
		keys = append(keys, h.Message.ConversationID+"/"+itoa(h.Message.Seq))
		if h.Message.Status != "OK" || h.Message.Content == nil {
			t.Errorf("hit %s/%d reads %s with content %v", h.Message.ConversationID, h.Message.Seq, h.Message.Status, h.Message.Content)
		}
	}
	return keys, out.Search
}

// onEachSearchEngine runs a search test against a gateway on each engine: the embedded Bleve
// index and a PostgreSQL server the test starts (as it starts redis-server).
func onEachSearchEngine(t *testing.T, test func(*testing.T, *gatewaytest.Gateway)) {
	onEachSearchEngineWith(t, nil, test)
}

// onEachSearchEngineWith is onEachSearchEngine with the gateways' configuration changed by
// tune (nil: as is) before the engine is set.
func onEachSearchEngineWith(t *testing.T, tune func(*gateway.Config), test func(*testing.T, *gatewaytest.Gateway)) {
	t.Run("bleve", func(t *testing.T) { test(t, gatewaytest.StartWith(t, tune)) })
	t.Run("postgres", func(t *testing.T) {
		url := testenv.Postgres(t).URL()
		test(t, gatewaytest.StartWith(t, func(c *gateway.Config) {
			if tune != nil {
				tune(c)
			}
			c.SearchPostgres = url
		}))
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func expectFound(t *testing.T, g *gatewaytest.Gateway, who, token string, vars map[string]any, want ...string) {
	t.Helper()
	got, res := found(t, g, token, vars)
	if !slices.Equal(got, want) {
		t.Errorf("%s searching %v finds %v, want %v", who, vars, got, want)
	}
	if res.Count != len(want) || !res.CountIsExact {
		t.Errorf("%s searching %v: count %d (exact %v), want %d", who, vars, res.Count, res.CountIsExact, len(want))
	}
}

// Ensure search shows a user exactly what they may read: a revoke removes the hit, a delete
// for me hides it for that user only, a delete for everyone and a clear remove it, a member
// removed from a group no longer finds its messages, and a CJK substring is found.
func TestSearchVisibility(t *testing.T) { onEachSearchEngine(t, testSearchVisibility) }

func testSearchVisibility(t *testing.T, g *gatewaytest.Gateway) {
	alice, bob, carol := g.Token("alice"), g.Token("bob"), g.Token("carol")
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}, {"userID": "carol"}}}, &struct{}{})
	for _, text := range []string{"meeting 我们明天去北京开会", "second meeting note", "this meeting gets revoked"} {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": text})
	}
	g.SendGQL(carol, map[string]any{"groupID": "team", "contentType": 101, "content": "team meeting agenda"})
	g.SendGQL(alice, map[string]any{"recvID": "dave", "contentType": 101, "content": "meeting dave alone"})

	all := []string{"sg_team/1", "si_alice_bob/3", "si_alice_bob/2", "si_alice_bob/1"}
	expectFound(t, g, "bob", bob, map[string]any{"q": "meeting"}, all...)
	expectFound(t, g, "bob", bob, map[string]any{"q": "北京"}, "si_alice_bob/1")
	expectFound(t, g, "bob", bob, map[string]any{"q": "明天去"}, "si_alice_bob/1")
	expectFound(t, g, "bob", bob, map[string]any{"q": "meeting", "c": "sg_team"}, "sg_team/1")
	expectFound(t, g, "bob", bob, map[string]any{"q": "meeting", "s": "carol"}, "sg_team/1")
	expectFound(t, g, "carol", carol, map[string]any{"q": "meeting"}, "sg_team/1")
	if code := g.ErrorCode(carol, searchQuery, map[string]any{"q": "meeting", "c": "si_alice_bob"}); code != "FORBIDDEN" {
		t.Errorf("carol searching a chat she is not in: %q, want FORBIDDEN", code)
	}

	g.Query(alice, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 3}, &struct{}{})
	expectFound(t, g, "bob after the revoke", bob, map[string]any{"q": "meeting"}, "sg_team/1", "si_alice_bob/2", "si_alice_bob/1")
	expectFound(t, g, "bob after the revoke", bob, map[string]any{"q": "revoked"})

	g.Query(bob, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{2}}, &struct{}{})
	expectFound(t, g, "bob after deleting for himself", bob, map[string]any{"q": "meeting"}, "sg_team/1", "si_alice_bob/1")
	expectFound(t, g, "alice after bob deleted for himself", alice, map[string]any{"q": "meeting"},
		"si_alice_dave/1", "sg_team/1", "si_alice_bob/2", "si_alice_bob/1")

	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}}}, &struct{}{})
	expectFound(t, g, "carol removed from the group", carol, map[string]any{"q": "meeting"})
	expectFound(t, g, "bob", bob, map[string]any{"q": "agenda"}, "sg_team/1")

	g.Query(alice, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{1}, "all": true}, &struct{}{})
	expectFound(t, g, "bob after a delete for everyone", bob, map[string]any{"q": "北京"})

	g.SendGQL(bob, map[string]any{"recvID": "alice", "contentType": 101, "content": "meeting before the clear"})
	g.Query(bob, clearMutation, map[string]any{"c": "si_alice_bob"}, &struct{}{})
	expectFound(t, g, "bob after clearing the chat", bob, map[string]any{"q": "meeting"}, "sg_team/1")
	expectFound(t, g, "alice after bob cleared for himself", alice, map[string]any{"q": "clear"}, "si_alice_bob/4")
}

// Ensure pages follow each other through endCursor, newest first, with filters, and that bad
// arguments are refused.
func TestSearchPaging(t *testing.T) { onEachSearchEngine(t, testSearchPaging) }

func testSearchPaging(t *testing.T, g *gatewaytest.Gateway) {
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 5; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "paged update"})
	}
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 102, "content": "paged picture"})
	var got []string
	vars := map[string]any{"q": "paged", "n": 2, "t": []int{101}}
	for page := 0; ; page++ {
		keys, res := found(t, g, bob, vars)
		got = append(got, keys...)
		if res.Count != 5 || !res.CountIsExact {
			t.Fatalf("page %d: count %d (exact %v), want 5", page, res.Count, res.CountIsExact)
		}
		if !res.HasMore {
			break
		}
		if page > 5 || res.EndCursor == nil {
			t.Fatalf("page %d: hasMore with endCursor %v", page, res.EndCursor)
		}
		vars["after"] = *res.EndCursor
	}
	if want := []string{"si_alice_bob/5", "si_alice_bob/4", "si_alice_bob/3", "si_alice_bob/2", "si_alice_bob/1"}; !slices.Equal(got, want) {
		t.Errorf("pages: %v, want %v", got, want)
	}
	for _, c := range []struct {
		vars map[string]any
		code string
	}{
		{map[string]any{"q": "  "}, "BAD_USER_INPUT"},
		{map[string]any{"q": "paged", "n": 101}, "LIMIT_EXCEEDED"},
		{map[string]any{"q": "paged", "after": "garbage"}, "BAD_USER_INPUT"},
	} {
		if code := g.ErrorCode(bob, searchQuery, c.vars); code != c.code {
			t.Errorf("search %v: %q, want %s", c.vars, code, c.code)
		}
	}
}

// Ensure a message is found by a search right after its send is acknowledged.
func TestSearchFindsASendAtOnce(t *testing.T) { onEachSearchEngine(t, testSearchFindsASendAtOnce) }

func testSearchFindsASendAtOnce(t *testing.T, g *gatewaytest.Gateway) {
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 10; i++ {
		m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "fresh " + itoa(int64(i)) + " 新消息"})
		keys, _ := found(t, g, bob, map[string]any{"q": "新消息", "n": 1})
		if len(keys) != 1 || keys[0] != "si_alice_bob/"+itoa(m.Seq) {
			t.Fatalf("right after send %d was acknowledged, a search finds %v", i, keys)
		}
	}
}

// Ensure a message is searchable within a second of its send's acknowledgement (issue 33's
// target, at the 99th percentile): 200 sends through the gateway, each followed by searches
// for a word only it holds until one finds it. The time from the acknowledgement to the
// answer that finds it is logged (p50, p99); the writer indexes before it acknowledges, so
// the first search should find it.
func TestSearchableWithinASecondOfTheAck(t *testing.T) {
	onEachSearchEngine(t, testSearchableWithinASecondOfTheAck)
}

func testSearchableWithinASecondOfTheAck(t *testing.T, g *gatewaytest.Gateway) {
	const sends = 200
	alice, bob := g.Token("alice"), g.Token("bob")
	var lags []time.Duration
	retried := 0
	for i := range sends {
		word := "ackprobe" + letters(i)
		m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "just sent " + word})
		acked := time.Now()
		for tries := 0; ; tries++ {
			keys, _ := found(t, g, bob, map[string]any{"q": word, "n": 1})
			if len(keys) == 1 && keys[0] == "si_alice_bob/"+itoa(m.Seq) {
				lags = append(lags, time.Since(acked))
				break
			}
			if time.Since(acked) > 5*time.Second {
				t.Fatalf("send %d (seq %d) not found 5 s after its acknowledgement (search finds %v)", i, m.Seq, keys)
			}
			if tries == 0 {
				retried++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	slices.Sort(lags)
	p50, p99 := lags[len(lags)/2], lags[len(lags)*99/100-1]
	t.Logf("%d sends: acknowledgement to a search finding it: p50 %s, p99 %s, max %s; %d needed more than one search",
		sends, p50, p99, lags[len(lags)-1], retried)
	if p99 > time.Second {
		t.Errorf("p99 from acknowledgement to searchable = %s, want at most 1 s", p99)
	}
}

// letters spells n in the letters a-z, so that a probe word is one token.
func letters(n int) string {
	s := ""
	for {
		s = string(rune('a'+n%26)) + s
		if n /= 26; n == 0 {
			return s
		}
	}
}
