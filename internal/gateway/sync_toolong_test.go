package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/syncclient"
)

// serverCounters reads a user's conversations' counters and total unread through syncState.
func serverCounters(t *testing.T, g *gatewaytest.Gateway, token string) (map[string]syncclient.Counters, int64, string) {
	t.Helper()
	out := map[string]syncclient.Counters{}
	var total int64
	var head string
	var after any
	for page := 0; ; page++ {
		var r struct {
			SyncState struct {
				Token         string
				TotalUnread   int64
				HasMore       bool
				EndCursor     *string
				Conversations []struct {
					ID string
					syncclient.Counters
				}
			}
		}
		g.Query(token, `query($after: String) { syncState(after: $after) { token totalUnread hasMore endCursor
			conversations { id maxSeq minSeq readSeq unreadCount } } }`, map[string]any{"after": after}, &r)
		if page == 0 {
			total, head = r.SyncState.TotalUnread, r.SyncState.Token
		}
		for _, c := range r.SyncState.Conversations {
			out[c.ID] = c.Counters
		}
		if !r.SyncState.HasMore {
			return out, total, head
		}
		after = *r.SyncState.EndCursor
	}
}

// noteToSelf stores a message in a group of user's own and returns a function that appends n
// events to user's log: that message's event, appended n times without its key (the log would
// keep it once). The events are real NEW_MESSAGE events of the user, with the user's real
// counters, and being in a group of one they fill nobody else's log.
func noteToSelf(t *testing.T, g *gatewaytest.Gateway, user string) func(n int) {
	t.Helper()
	ctx := context.Background()
	group := user + "-notes"
	if err := g.Ledger.SetGroup(ctx, group, []im.GroupMember{{UserID: user, Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	res, err := g.Ingest.Ingest(ctx, []*im.Message{{SendID: user, GroupID: group, ContentType: 101, Content: "note to self"}})
	if err != nil {
		t.Fatal(err)
	}
	p := res[0].Placements[0]
	// The message again and again, without the key that would make the log keep it once.
	again := cache.EventAppend{UserID: user, Event: im.Event{Type: im.EventNewMessage, Time: p.Message.SendTime,
		ConversationID: p.ConversationID, Seq: p.Seq, SendID: user}, MaxSeq: p.Seq, ReadSeq: p.Seq}
	return func(n int) {
		t.Helper()
		for n > 0 {
			batch := make([]cache.EventAppend, min(2000, n))
			for i := range batch {
				batch[i] = again
			}
			if _, err := g.Cache.AppendEvents(ctx, batch); err != nil {
				t.Fatal(err)
			}
			n -= len(batch)
		}
	}
}

// countersDiff describes how a replica's counters differ from the server's ("" if not).
func countersDiff(r syncclient.Replica, want map[string]syncclient.Counters, total int64) string {
	var d []string
	if r.TotalUnread != total {
		d = append(d, fmt.Sprintf("totalUnread %d, server %d", r.TotalUnread, total))
	}
	if len(r.Conversations) != len(want) {
		d = append(d, fmt.Sprintf("%d conversations, server %d", len(r.Conversations), len(want)))
	}
	for id, w := range want {
		if got := r.Conversations[id].Counters; got != w {
			d = append(d, fmt.Sprintf("%s: %+v, server %+v", id, got, w))
		}
	}
	return strings.Join(d, "\n")
}

// Ensure a device that missed 50,000 events is told tooLong and recovers through the state
// summary in at most 2 + ceil(conversations/100) requests, ending with the server's counters,
// over HTTP (Sync) and over WebSocket (Run).
func TestSyncTooLongRecovery(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.EventLogMaxLen = 1000
		c.Handler.RateLimit = -1
	})
	ctx := context.Background()

	// 150 conversations with peers (and dora's own group below), so the state summary takes
	// two pages.
	const peers = 150
	const conversations = peers + 1
	var msgs []*im.Message
	for i := 0; i < peers; i++ {
		peer := fmt.Sprintf("peer%03d", i)
		for j := 0; j <= i%2; j++ {
			msgs = append(msgs, &im.Message{SendID: peer, RecvID: "dora", ContentType: 101, Content: fmt.Sprintf("%s %d", peer, j)})
		}
	}
	// In batches: one batch's seq state for 150 conversations is more than FerretDB writes
	// within the driver's timeout on a busy machine.
	started := time.Now()
	for lo := 0; lo < len(msgs); lo += 75 {
		if _, err := g.Ingest.Ingest(ctx, msgs[lo:min(lo+75, len(msgs))]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages in %d conversations stored in %v", len(msgs), peers, time.Since(started).Round(time.Millisecond))
	dora := g.Token("dora")
	newClient := func() *syncclient.Client {
		c, err := syncclient.New(g.URL, dora, syncclient.Options{OnApply: func(a syncclient.Applied) {
			if err := syncclient.CheckInvariants(a); err != nil {
				t.Error(err)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	viaSync, viaRun := newClient(), newClient()
	for _, c := range []*syncclient.Client{viaSync, viaRun} {
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stale := viaSync.Token()
	if got := len(viaSync.Replica().Conversations); got != peers {
		t.Fatalf("bootstrapped %d conversations, want %d", got, peers)
	}
	t.Logf("bootstrap: requests %v", viaSync.Requests())

	// Offline, the devices miss 50,000 of dora's events, and a few real changes among them.
	started = time.Now()
	const missed = 50000
	flood := noteToSelf(t, g, "dora")
	flood(missed)
	g.Send("peer007", "dora", "", 2)
	g.Query(dora, `mutation { markConversationRead(conversationID: "si_dora_peer010") { readSeq } }`, nil, &struct{}{})
	t.Logf("%d events produced in %v", missed, time.Since(started).Round(time.Millisecond))

	var d struct{ SyncDifference struct{ TooLong bool } }
	g.Query(dora, `query($s: String!) { syncDifference(since: $s) { tooLong } }`, map[string]any{"s": stale}, &d)
	if !d.SyncDifference.TooLong {
		t.Fatalf("difference since %s after %d missed events: tooLong false", stale, missed)
	}
	want, total, head := serverCounters(t, g, dora)
	if user := userCursor(head); len(user[strings.LastIndexByte(user, '.')+1:]) < 5 {
		t.Fatalf("head %s: the log did not move past %d events", head, missed)
	}
	budget := 2 + (conversations+99)/100

	before := viaSync.Requests()
	if err := viaSync.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := viaSync.Requests()
	used := map[string]int{}
	total0 := 0
	for op, n := range after {
		if n-before[op] > 0 {
			used[op] = n - before[op]
			total0 += n - before[op]
		}
	}
	t.Logf("recovery through Sync: %d requests %v (budget %d)", total0, used, budget)
	if total0 > budget || used["SyncState"] != 2 || used["SyncDifference"] < 1 {
		t.Errorf("recovery through Sync took %v, want the tooLong difference and two syncState pages within %d requests", used, budget)
	}
	if diff := countersDiff(viaSync.Replica(), want, total); diff != "" {
		t.Errorf("after recovery through Sync:\n%s", diff)
	}

	// The same over WebSocket: the subscription answers TOO_LONG, the client reads the summary.
	before = viaRun.Requests()
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := viaRun.Run(runCtx); err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for viaRun.Token() != head {
		if time.Now().After(deadline) {
			t.Fatalf("Run did not recover: at %s, head %s", viaRun.Token(), head)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	after = viaRun.Requests()
	total1 := 0
	for op, n := range after {
		total1 += n - before[op]
	}
	t.Logf("recovery through Run: %d HTTP requests (budget %d)", total1, budget)
	if total1 > budget {
		t.Errorf("recovery through Run took %d HTTP requests, want at most %d", total1, budget)
	}
	if diff := countersDiff(viaRun.Replica(), want, total); diff != "" {
		t.Errorf("after recovery through Run:\n%s", diff)
	}
}
