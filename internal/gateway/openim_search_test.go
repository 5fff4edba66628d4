package gateway_test

import (
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openimsdk/protocol/sdkws"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// onEachOpenIMSearchEngine runs a test against an OpenIM deployment, its Kafka and a gateway
// following it, on each search engine: the embedded Bleve index and a PostgreSQL server the
// test starts.
func onEachOpenIMSearchEngine(t *testing.T, test func(*testing.T, *openIMWithFeed)) {
	t.Run("bleve", func(t *testing.T) { test(t, startOpenIMWithFeedTuned(t, nil)) })
	t.Run("postgres", func(t *testing.T) {
		url := testenv.Postgres(t).URL()
		test(t, startOpenIMWithFeedTuned(t, func(c *gateway.Config) { c.SearchPostgres = url }))
	})
}

// eventuallyFound waits (the feed and the index follow OpenIM by a moment) until who's search
// finds exactly want, newest first, with the count to match, and fails if it never does.
func eventuallyFound(t *testing.T, w *openIMWithFeed, who, token string, vars map[string]any, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, res := found(t, w.Gateway, token, vars)
		if slices.Equal(got, want) && res.Count == len(want) && res.CountIsExact {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s searching %v finds %v (count %d, exact %v), want %v", who, vars, got, res.Count, res.CountIsExact, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untilSearchable pushes a message's record until a search by token finds it: the feed's
// consumer group joins in the background and starts at the newest records, so a record
// produced before it joined is never read (a second copy indexes nothing twice).
func untilSearchable(t *testing.T, w *openIMWithFeed, token, query string, m *openimtest.MsgData, seq int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.push.PushMessage(context.Background(), pushed(m, seq), headers)
		stop := time.Now().Add(time.Second)
		for time.Now().Before(stop) {
			if got, _ := found(t, w.Gateway, token, map[string]any{"q": query}); len(got) > 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed indexed nothing within 30 s")
		}
	}
}

// Ensure search in OpenIM mode shows a user exactly what they may read, as OpenIM's records
// and stores tell it: messages from their records and from the gap fill (a record lost) are
// found, a CJK substring too; a revoke removes the hit; a delete for me hides it for that user
// only; a delete for everyone removes it; a member who quit a group no longer finds its
// messages (though OpenIM lets them read what came before they left); seqs below a user's or a
// conversation's min seq (a clear) are never found; a conversation the user is not in is
// FORBIDDEN.
func TestOpenIMSearch(t *testing.T) { onEachOpenIMSearchEngine(t, testOpenIMSearch) }

func testOpenIMSearch(t *testing.T, w *openIMWithFeed) {
	ctx := context.Background()
	conv, team := openimtest.SingleConversationID("alice", "bob"), openimtest.GroupConversationID("team")
	alice, bob, carol := w.IM.Login("alice", 2, 7), w.IM.Login("bob", 2, 7), w.IM.Login("carol", 2, 7)
	for _, u := range []string{"alice", "bob", "carol"} {
		w.IM.AddGroupMember("team", u, openimtest.RoleMember)
	}
	text := func(from, to, s string) *openimtest.MsgData {
		return openimtest.Single(from, to, openimtest.ContentText, openimtest.TextContent(s))
	}
	first := text("alice", "bob", "meeting 我们明天去北京开会")
	s1 := w.IM.Send(conv, first)[0]
	untilSearchable(t, w, bob, "北京", first, s1)

	second, third := text("alice", "bob", "second meeting note"), text("alice", "bob", "this meeting gets revoked")
	seqs := w.IM.Send(conv, second, third)
	s2, s3 := seqs[0], seqs[1]
	w.push.PushMessage(ctx, pushed(second, s2), headers)
	w.push.PushMessage(ctx, pushed(third, s3), headers)
	agenda := openimtest.Group("carol", "team", openimtest.ContentText, openimtest.TextContent("team meeting agenda"))
	g1 := w.IM.Send(team, agenda)[0]
	w.push.PushMessage(ctx, pushed(agenda, g1), headers)
	// A message whose record never reaches Kafka: the gap fill reads it from OpenIM's stores.
	lost := text("bob", "alice", "meeting whose record was lost")
	s4 := w.IM.Send(conv, lost)[0]

	key := func(c string, s int64) string { return c + "/" + itoa(s) }
	eventuallyFound(t, w, "bob", bob, map[string]any{"q": "meeting"}, key(conv, s4), key(team, g1), key(conv, s3), key(conv, s2), key(conv, s1))
	eventuallyFound(t, w, "bob", bob, map[string]any{"q": "明天去"}, key(conv, s1))
	eventuallyFound(t, w, "bob", bob, map[string]any{"q": "meeting", "c": team}, key(team, g1))
	eventuallyFound(t, w, "carol", carol, map[string]any{"q": "meeting"}, key(team, g1))
	if code := w.ErrorCode(carol, searchQuery, map[string]any{"q": "meeting", "c": conv}); code != "FORBIDDEN" {
		t.Errorf("carol searching a chat she is not in: %q, want FORBIDDEN", code)
	}

	n := int64(0)
	tip := func() int64 { n++; return n }
	w.IM.Revoke(conv, s3, openimtest.Revoke{UserID: "alice"})
	w.push.PushNotification(ctx, openimfeedtest.Revoke("alice", pushed(third, s3), conv, s3, tip()), headers)
	eventuallyFound(t, w, "bob after the revoke", bob, map[string]any{"q": "meeting"}, key(conv, s4), key(team, g1), key(conv, s2), key(conv, s1))
	eventuallyFound(t, w, "alice after the revoke", alice, map[string]any{"q": "revoked"})

	w.IM.DeleteForMe(conv, "bob", s2)
	w.push.PushNotification(ctx, openimfeedtest.DeleteForSelf("bob", conv, []int64{s2}, tip()), headers)
	eventuallyFound(t, w, "bob after deleting for himself", bob, map[string]any{"q": "meeting"}, key(conv, s4), key(team, g1), key(conv, s1))
	eventuallyFound(t, w, "alice after bob deleted for himself", alice, map[string]any{"q": "meeting"}, key(conv, s4), key(team, g1), key(conv, s2), key(conv, s1))

	w.IM.DeleteForEveryone(conv, s1)
	w.push.PushNotification(ctx, openimfeedtest.DeleteForEveryone("alice", "bob", openimtest.SingleChatType, conv, []int64{s1}, tip()), headers)
	eventuallyFound(t, w, "alice after the delete for everyone", alice, map[string]any{"q": "北京"})
	eventuallyFound(t, w, "bob after the delete for everyone", bob, map[string]any{"q": "meeting"}, key(conv, s4), key(team, g1))

	// carol quits the group: OpenIM still lets her read up to where she left, search does not.
	w.IM.QuitGroup("team", "carol")
	w.push.PushNotification(ctx, openimfeedtest.Notification{SendID: "carol", RecvID: "team",
		ContentType: 1504, SessionType: openimtest.ReadGroupChatType, Tips: &sdkws.MemberQuitTips{}}, headers)
	later := openimtest.Group("alice", "team", openimtest.ContentText, openimtest.TextContent("meeting after carol left"))
	g2 := w.IM.Send(team, later)[0]
	w.push.PushMessage(ctx, pushed(later, g2), headers)
	eventuallyFound(t, w, "bob", bob, map[string]any{"q": "meeting"}, key(team, g2), key(conv, s4), key(team, g1))
	eventuallyFound(t, w, "carol after quitting", carol, map[string]any{"q": "meeting"})
	if got := messagesOf(w.OpenIMGateway, carol, team, g1); len(got) != 1 || got[0].Status != "OK" {
		t.Errorf("carol reads what came before she left as %+v; the read path changed, not search", got)
	}

	// bob clears the chat for himself; the group's history before g2 is cleared for everyone.
	w.IM.SetUserMinSeq(conv, "bob", s4+1)
	w.push.PushNotification(ctx, openimfeedtest.ClearForSelf("bob", []string{conv}), headers)
	w.IM.SetMinSeq(team, g2)
	w.push.PushNotification(ctx, openimfeedtest.ClearForEveryone("alice", "team", openimtest.ReadGroupChatType, team), headers)
	eventuallyFound(t, w, "bob after the clears", bob, map[string]any{"q": "meeting"}, key(team, g2))
	eventuallyFound(t, w, "alice after the clears", alice, map[string]any{"q": "meeting"}, key(team, g2), key(conv, s4), key(conv, s2))
}

var openIMLatencyMessages = flag.Int("search.openim-latency-messages", 20,
	"how many messages TestOpenIMSearchLatency times (docs/performance.md's figures: 200)")

// Ensure, and measure, that a message OpenIM acknowledged is searchable at once: messages
// (-search.openim-latency-messages), each stored as OpenIM stores it and its record produced to Kafka, then searched
// for until found. The figures (from just before the record is produced, so the produce's
// own round trip is included) go to the test log for docs/performance.md; the test fails
// only when a message is not found within 10 s.
func TestOpenIMSearchLatency(t *testing.T) { onEachOpenIMSearchEngine(t, testOpenIMSearchLatency) }

func testOpenIMSearchLatency(t *testing.T, w *openIMWithFeed) {
	ctx := context.Background()
	conv := openimtest.SingleConversationID("alice", "bob")
	bob := w.IM.Login("bob", 2, 7)
	word := func(i int) string { // letters only: one token on both engines
		return "probe" + string(rune('a'+i/26/26%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
	}
	warm := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("warm up"))
	untilSearchable(t, w, bob, "warm", warm, w.IM.Send(conv, warm)[0])

	n := *openIMLatencyMessages
	took := make([]time.Duration, 0, n)
	for i := range n {
		m := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("latency "+word(i)))
		seq := w.IM.Send(conv, m)[0]
		start := time.Now()
		w.push.PushMessage(ctx, pushed(m, seq), headers)
		for {
			if got, _ := found(t, w.Gateway, bob, map[string]any{"q": word(i)}); len(got) == 1 {
				took = append(took, time.Since(start))
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("message %d not searchable within 10 s of its record", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	slices.Sort(took)
	at := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("searchable after the record: %d messages, p50 %s, p95 %s, p99 %s, max %s (load average %s)", n,
		at(0.50).Round(time.Millisecond), at(0.95).Round(time.Millisecond), at(0.99).Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond), strings.TrimSpace(string(load)))
}
