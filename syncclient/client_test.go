package syncclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeGateway answers the client's requests from a scripted event log and message table, so
// that the client can be shown what a real gateway seldom sends: a gap in the live stream, a
// duplicate, TOO_LONG, a read below the min seq. The real gateway is tested in the repository
// root (sync_convergence_test.go and others).
type fakeGateway struct {
	t  *testing.T
	mu sync.Mutex
	// epoch of the log; log[i] has position i+1.
	epoch string
	log   []Event
	// state is the summary syncState answers (one conversation per entry).
	state []Conversation
	// messages by conversation and seq: the server's current view.
	messages map[string]map[int64]Message
	// minSeq, per conversation, below which messages answers HISTORY_UNAVAILABLE.
	minSeq map[string]int64
	// live is what a subscription sends, in order, after connection_ack.
	live []Event
	// ops counts requests by operation.
	ops map[string]int
}

func newFakeGateway(t *testing.T) (*fakeGateway, *httptest.Server) {
	f := &fakeGateway{t: t, epoch: "e1", messages: map[string]map[int64]Message{}, minSeq: map[string]int64{}, ops: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGateway) event(ev Event) Event {
	ev.Position = int64(len(f.log) + 1)
	ev.Token = fmt.Sprintf("%s.%d", f.epoch, ev.Position)
	f.log = append(f.log, ev)
	return ev
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "" {
		f.serveWebSocket(w, r)
		return
	}
	var req struct {
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[req.OperationName]++
	var out any
	switch req.OperationName {
	case "SyncState":
		var convs []map[string]any
		for _, c := range f.state {
			cm := map[string]any{"id": c.ID, "maxSeq": c.MaxSeq, "minSeq": c.MinSeq, "readSeq": c.ReadSeq, "unreadCount": c.UnreadCount}
			if m, ok := f.messages[c.ID][c.MaxSeq]; ok {
				cm["lastMessage"] = wire(m)
			}
			convs = append(convs, cm)
		}
		out = map[string]any{"data": map[string]any{"viewer": map[string]any{"userID": "me"}, "syncState": map[string]any{
			"token": fmt.Sprintf("%s.%d", f.epoch, len(f.log)), "totalUnread": 0, "hasMore": false, "conversations": convs}}}
	case "SyncDifference":
		since := req.Variables["since"].(string)
		cur := parseToken(since).user
		epoch, pos := cur.epoch, cur.position
		d := map[string]any{"token": fmt.Sprintf("%s.%d", f.epoch, len(f.log)), "hasMore": false, "tooLong": epoch != f.epoch, "events": []Event{}}
		if epoch == f.epoch {
			evs := f.log[pos:]
			if len(evs) > 2 {
				evs, d["hasMore"] = evs[:2], true // small pages, so paging is exercised
			}
			if len(evs) > 0 {
				d["token"] = evs[len(evs)-1].Token
			}
			d["events"] = evs
		}
		out = map[string]any{"data": map[string]any{"syncDifference": d}}
	case "Messages":
		data := map[string]any{}
		var errs []map[string]any
		for i := 0; ; i++ {
			c, ok := req.Variables[fmt.Sprintf("c%d", i)].(string)
			if !ok {
				break
			}
			var list []map[string]any
			for _, s := range req.Variables[fmt.Sprintf("s%d", i)].([]any) {
				seq := int64(s.(float64))
				if seq < f.minSeq[c] {
					errs = append(errs, map[string]any{"message": "history unavailable", "path": []any{fmt.Sprintf("m%d", i)},
						"extensions": map[string]any{"code": "HISTORY_UNAVAILABLE", "minSeq": f.minSeq[c]}})
					break
				}
				m, ok := f.messages[c][seq]
				if !ok {
					m = Message{Seq: seq, Status: StatusMissing}
				}
				list = append(list, wire(m))
			}
			data[fmt.Sprintf("m%d", i)] = list
		}
		if errs != nil {
			out = map[string]any{"data": nil, "errors": errs}
		} else {
			out = map[string]any{"data": data}
		}
	default:
		f.t.Errorf("unexpected operation %q", req.OperationName)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func wire(m Message) map[string]any {
	out := map[string]any{"seq": m.Seq, "status": m.Status, "sendID": nil, "content": nil}
	if m.Status != StatusMissing {
		out["sendID"] = m.SendID
	}
	if m.Status == StatusOK {
		out["content"] = m.Content
	}
	return out
}

func (f *fakeGateway) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return
	}
	defer func() { _ = conn.CloseNow() }()
	ctx := r.Context()
	send := func(v any) error {
		b, _ := json.Marshal(v)
		return conn.Write(ctx, websocket.MessageText, b)
	}
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		_ = json.Unmarshal(b, &m)
		switch m.Type {
		case "connection_init":
			_ = send(map[string]any{"type": "connection_ack"})
		case "subscribe":
			f.mu.Lock()
			live := f.live
			f.live = nil
			f.mu.Unlock()
			for _, ev := range live {
				if ev.Type == EventTooLong {
					_ = send(map[string]any{"id": m.ID, "type": "next", "payload": map[string]any{"data": map[string]any{"syncEvents": ev}}})
					_ = send(map[string]any{"id": m.ID, "type": "complete"})
					break
				}
				_ = send(map[string]any{"id": m.ID, "type": "next", "payload": map[string]any{"data": map[string]any{"syncEvents": ev}}})
			}
		}
	}
}

// Ensure the client bootstraps, fills a gap in the live stream from syncDifference, ignores a
// duplicate, fetches skipped seqs, and ends with the server's messages and counters; after a
// TOO_LONG it starts again from the state summary.
func TestClientGapsDuplicatesAndTooLong(t *testing.T) {
	f, srv := newFakeGateway(t)
	const conv = "si_me_you"
	f.messages[conv] = map[int64]Message{
		1: {Seq: 1, Status: StatusOK, SendID: "you", Content: "one"},
		2: {Seq: 2, Status: StatusOK, SendID: "you", Content: "two"},
	}
	f.state = []Conversation{{ID: conv, Counters: Counters{MaxSeq: 2, MinSeq: 1, UnreadCount: 2}}}

	var applied []Applied
	var logs []string
	var mu sync.Mutex
	c, err := New(srv.URL, "jwt", Options{
		FullHistory: true,
		OnApply: func(a Applied) {
			mu.Lock()
			applied = append(applied, a)
			mu.Unlock()
			if err := CheckInvariants(a); err != nil {
				t.Error(err)
			}
		},
		Logf: func(format string, args ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			mu.Unlock()
		},
		ReconnectMin: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c.Replica(); r.Token != "e1.0" || len(r.Conversations[conv].Messages) != 2 || r.TotalUnread != 2 {
		t.Fatalf("after bootstrap: %+v", r)
	}

	// Meanwhile: seq 3 and seq 5 arrive (seq 4 is never announced: its sender failed), the
	// user reads on another device, seq 3 is revoked and seq 5 deleted.
	f.mu.Lock()
	f.messages[conv][3] = Message{Seq: 3, Status: StatusRevoked, SendID: "you"}
	f.messages[conv][5] = Message{Seq: 5, Status: StatusDeleted, SendID: "me"}
	e1 := f.event(Event{Type: EventNewMessage, ConversationID: conv, Seq: 3, SendID: "you", MaxSeq: 3, MinSeq: 1, UnreadCount: 3})
	e2 := f.event(Event{Type: EventNewMessage, ConversationID: conv, Seq: 5, SendID: "me", MaxSeq: 5, MinSeq: 1, ReadSeq: 5})
	f.event(Event{Type: EventRead, ConversationID: conv, MaxSeq: 5, MinSeq: 1, ReadSeq: 5})
	f.event(Event{Type: EventRevoke, ConversationID: conv, Seq: 3})
	e5 := f.event(Event{Type: EventDelete, ConversationID: conv, Seqs: []int64{5}})
	// Live: 1, 2, then 5 (3 and 4 lost on the way), then 2 again.
	f.live = []Event{e1, e2, e5, e2}
	f.mu.Unlock()

	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- c.Run(runCtx) }()
	// The replica reaches e1.5 with the gap filled before the last live event (the duplicate)
	// has necessarily been read: wait for that too, or the log may not tell of it yet.
	waitUntil(t, func() bool {
		mu.Lock()
		dupSeen := strings.Contains(strings.Join(logs, "\n"), "position 2 already applied")
		mu.Unlock()
		return c.Token() == "e1.5" && c.Pending() == 0 && dupSeen
	})

	r := c.Replica()
	got := r.Conversations[conv]
	want := Counters{MaxSeq: 5, MinSeq: 1, ReadSeq: 5, UnreadCount: 0}
	if got.Counters != want || r.TotalUnread != 0 {
		t.Errorf("counters %+v (total %d), want %+v", got.Counters, r.TotalUnread, want)
	}
	wantMsgs := map[int64]Message{
		1: {Seq: 1, Status: StatusOK, SendID: "you", Content: "one"},
		2: {Seq: 2, Status: StatusOK, SendID: "you", Content: "two"},
		3: {Seq: 3, Status: StatusRevoked, SendID: "you"},
		4: {Seq: 4, Status: StatusMissing},
		5: {Seq: 5, Status: StatusDeleted, SendID: "me"},
	}
	if fmt.Sprint(got.Messages) != fmt.Sprint(wantMsgs) {
		t.Errorf("messages %v, want %v", got.Messages, wantMsgs)
	}
	mu.Lock()
	positions := make([]int64, len(applied))
	for i, a := range applied {
		positions[i] = a.Event.Position
	}
	joined := strings.Join(logs, "\n")
	mu.Unlock()
	if fmt.Sprint(positions) != "[1 2 3 4 5]" {
		t.Errorf("applied positions %v, want each of 1..5 once", positions)
	}
	if !strings.Contains(joined, "gap before e1.5") || !strings.Contains(joined, "position 2 already applied") {
		t.Errorf("the log does not tell of the gap and the duplicate:\n%s", joined)
	}

	// The log is lost: the live stream says TOO_LONG, and the client reads the summary again.
	f.mu.Lock()
	f.epoch, f.log = "e2", nil
	f.state[0].Counters = Counters{MaxSeq: 5, MinSeq: 1, ReadSeq: 5}
	f.live = []Event{{Type: EventTooLong, Token: "e2.0"}}
	f.mu.Unlock()
	c.DropConnection()
	waitUntil(t, func() bool { return c.Token() == "e2.0" && c.Pending() == 0 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops["SyncState"] != 2 {
		t.Errorf("SyncState asked %d times, want 2 (the bootstrap, then after TOO_LONG)", f.ops["SyncState"])
	}
	if reqs := c.Requests(); fmt.Sprint(reqs) != fmt.Sprint(f.ops) {
		t.Errorf("the client counted %v, the server saw %v", reqs, f.ops)
	}
}

// Ensure a body fetch that meets HISTORY_UNAVAILABLE (the conversation was cleared before the
// CLEAR event arrived) drops the seqs below the new min seq and fetches the rest.
func TestClientHistoryUnavailable(t *testing.T) {
	f, srv := newFakeGateway(t)
	const conv = "sg_team"
	f.messages[conv] = map[int64]Message{}
	for s := int64(1); s <= 4; s++ {
		f.messages[conv][s] = Message{Seq: s, Status: StatusOK, SendID: "you", Content: fmt.Sprint(s)}
	}
	f.state = []Conversation{{ID: conv, Counters: Counters{MaxSeq: 4, MinSeq: 1, UnreadCount: 4}}}
	f.minSeq[conv] = 3
	c, err := New(srv.URL, "jwt", Options{FullHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.Replica().Conversations[conv].Seqs()
	if fmt.Sprint(got) != "[3 4]" {
		t.Errorf("held seqs %v, want [3 4]", got)
	}
	if n := c.Requests()["Messages"]; n != 2 {
		t.Errorf("%d messages requests, want 2 (the refused one, then the rest)", n)
	}
}

// Ensure CheckInvariants catches what it is for.
func TestCheckInvariants(t *testing.T) {
	own := Event{Type: EventNewMessage, Position: 7, ConversationID: "c", Seq: 10, SendID: "me", MaxSeq: 10, MinSeq: 1, ReadSeq: 10}
	for _, tc := range []struct {
		name string
		a    Applied
		want string
	}{
		{"fine", Applied{UserID: "me", Event: own, Known: true, Before: Counters{MaxSeq: 9, MinSeq: 1, ReadSeq: 8, UnreadCount: 1}, After: Counters{MaxSeq: 10, MinSeq: 1, ReadSeq: 10}}, ""},
		{"negative", Applied{UserID: "me", Event: Event{Type: EventRevoke}, After: Counters{UnreadCount: -1}}, "unread count -1"},
		{"read back", Applied{UserID: "me", Event: Event{Type: EventRead, MaxSeq: 5, MinSeq: 1, ReadSeq: 3, UnreadCount: 2}, Known: true,
			Before: Counters{MaxSeq: 5, MinSeq: 1, ReadSeq: 4, UnreadCount: 1}, After: Counters{MaxSeq: 5, MinSeq: 1, ReadSeq: 3, UnreadCount: 2}}, "read seq went back"},
		{"own unread", Applied{UserID: "me", Event: own, Known: true, Before: Counters{MaxSeq: 9, MinSeq: 1, ReadSeq: 9}, After: Counters{MaxSeq: 10, MinSeq: 1, ReadSeq: 9, UnreadCount: 1}}, "own message at seq 10 left the read seq"},
		{"event inconsistent", Applied{UserID: "me", Event: Event{Type: EventRead, MaxSeq: 5, MinSeq: 1, ReadSeq: 3, UnreadCount: 1}}, "does not match its counters"},
	} {
		err := CheckInvariants(tc.a)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
