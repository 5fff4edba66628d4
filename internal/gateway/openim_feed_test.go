package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// peerIn returns a user whose single chat with bob OpenIM's producer puts in partition p of
// toPush (p < 0: in any partition but -p-1), so that a test can place records.
func peerIn(t *testing.T, p int32) string {
	t.Helper()
	for i := range 1000 {
		u := fmt.Sprintf("peer%d", i)
		got := openimfeedtest.SaramaHashPartition(sortedPair("bob", u), 4)
		if (p >= 0 && got == p) || (p < 0 && got != -p-1) {
			return u
		}
	}
	t.Fatalf("no peer of bob lands in partition %d", p)
	return ""
}

func sortedPair(a, b string) string {
	l := []string{a, b}
	sort.Strings(l)
	return strings.Join(l, "_")
}

// bobsNewMessages returns the seqs of the NEW_MESSAGE events bob's syncDifference gives after
// token, by conversation.
func bobsNewMessages(t *testing.T, w *openIMWithFeed, bob, token string) map[string][]int64 {
	t.Helper()
	var diff struct {
		SyncDifference struct {
			Events []model.SyncEvent `json:"events"`
		} `json:"syncDifference"`
	}
	w.Query(bob, `query($s: String!) { syncDifference(since: $s, limit: 500) { events { type conversationID seq } } }`,
		map[string]any{"s": token}, &diff)
	out := map[string][]int64{}
	for _, ev := range diff.SyncDifference.Events {
		if ev.Type == model.SyncEventTypeNewMessage {
			out[*ev.ConversationID] = append(out[*ev.ConversationID], *ev.Seq)
		}
	}
	return out
}

// Ensure one record msggate can never apply (a single chat with a user ID OpenIM's registration
// refuses and its stores hold anyway) does not stop the feed: the records after it, in its
// partition and in another, reach bob; it is counted once in
// msggate_openim_feed_records_skipped_total{reason="refused"} and kept, with its place in
// Kafka, where an operator finds it. Then msggate's Redis goes down: a record pushed meanwhile
// is neither skipped nor lost, and reaches bob once Redis is back.
func TestOpenIMFeedMovesPastARecordItCannotApply(t *testing.T) {
	w := startOpenIMWithFeed(t)
	ctx := context.Background()
	bob := w.IM.Login("bob", 2, 7)
	send := func(from, to, text string) (string, int64, *openimtest.MsgData) {
		conv := openimtest.SingleConversationID(from, to)
		m := openimtest.Single(from, to, openimtest.ContentText, openimtest.TextContent(text))
		return conv, w.IM.Send(conv, m)[0], m
	}
	var state struct {
		SyncState struct {
			Token string `json:"token"`
		} `json:"syncState"`
	}
	w.Query(bob, `{ syncState { token } }`, nil, &state)
	token := state.SyncState.Token

	// The consumer group joins in the background: produce until a first record is applied.
	warm, ws, wm := send("alice", "bob", "warm up")
	gatewaytest.WaitFor(t, 30*time.Second, "the feed applies a first record", func() bool {
		w.push.PushMessage(ctx, pushed(wm, ws), headers)
		return len(bobsNewMessages(t, w, bob, token)[warm]) > 0
	})

	poisonConv, ps, pm := send("eve:x", "bob", "poison")
	poison := w.push.PushMessage(ctx, pushed(pm, ps), headers)
	samePeer, otherPeer := peerIn(t, poison.Partition), peerIn(t, -poison.Partition-1)
	sameConv, ss, sm := send(samePeer, "bob", "same partition")
	same := w.push.PushMessage(ctx, pushed(sm, ss), headers)
	otherConv, osq, om := send(otherPeer, "bob", "other partition")
	other := w.push.PushMessage(ctx, pushed(om, osq), headers)
	if same.Partition != poison.Partition || other.Partition == poison.Partition {
		t.Fatalf("records in partitions %d, %d, %d: want the second in the first's, the third in another", poison.Partition, same.Partition, other.Partition)
	}
	gatewaytest.WaitFor(t, 20*time.Second, "the records after the refused one reach bob", func() bool {
		got := bobsNewMessages(t, w, bob, token)
		return len(got[sameConv]) > 0 && len(got[otherConv]) > 0
	})
	if got := bobsNewMessages(t, w, bob, token); len(got[poisonConv]) != 0 || !slices.Equal(got[sameConv], []int64{ss}) || !slices.Equal(got[otherConv], []int64{osq}) {
		t.Fatalf("bob's new messages %v, want %s %d and %s %d once each, nothing of %s", got, sameConv, ss, otherConv, osq, poisonConv)
	}
	const skipped = `msggate_openim_feed_records_skipped_total{reason="refused"}`
	if n := scrapeMetrics(w.Gateway)[skipped]; n != 1 {
		t.Errorf("%s = %v, want 1", skipped, n)
	}
	kept, err := w.Cache.SkippedRecords(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].Topic != openimfeedtest.Topic || kept[0].Partition != poison.Partition ||
		kept[0].Offset != poison.Offset || kept[0].Reason != "refused" || kept[0].Key != "bob_eve:x" ||
		!strings.Contains(kept[0].Error, "user ID") || len(kept[0].Value) == 0 {
		t.Fatalf("kept skipped records %+v, want the refused one at partition %d offset %d", kept, poison.Partition, poison.Offset)
	}

	// An outage: msggate's Redis is down while a record comes, and back (empty) later.
	w.Redis.Stop()
	lateConv, ls, lm := send("alice", "bob", "during the outage")
	w.push.PushMessage(ctx, pushed(lm, ls), headers)
	time.Sleep(time.Second) // the feed fails to apply it, more than once
	w.Redis.Start()
	// Redis lost bob's log: his device reads syncState again and follows the new log from its
	// start (position 0 of its epoch).
	var fresh string
	gatewaytest.WaitFor(t, 20*time.Second, "the record of the outage reaches bob's new log", func() bool {
		r := w.Post(bob, `{ syncState { token } }`, nil)
		if len(r.Errors) > 0 {
			return false
		}
		remarshal(t, r.Data, &state)
		epoch, _, _ := strings.Cut(strings.SplitN(state.SyncState.Token, ",", 2)[0], ".")
		fresh = epoch + ".0"
		return len(bobsNewMessages(t, w, bob, fresh)[lateConv]) > 0
	})
	if got := bobsNewMessages(t, w, bob, fresh)[lateConv]; !slices.Equal(got, []int64{ls}) {
		t.Errorf("after the outage bob got seqs %v of %s, want [%d] once", got, lateConv, ls)
	}
	if n := scrapeMetrics(w.Gateway)[skipped]; n != 1 {
		t.Errorf("after the outage %s = %v, want still 1: an outage skips nothing", skipped, n)
	}
}
