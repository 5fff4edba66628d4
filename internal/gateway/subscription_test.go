package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/syncclient"
)

// dialRaw connects, authenticates and subscribes to syncEvents (live only). With tinyBuffer its
// socket's receive buffer is made as small as the kernel allows, so that a subscriber that
// stops reading pushes back on the gateway at once.
func dialRaw(t *testing.T, g *gatewaytest.Gateway, user string, tinyBuffer bool) *gatewaytest.WS {
	t.Helper()
	s := gatewaytest.ConnectWS(t, g.URL, g.Token(user), gatewaytest.WSOptions{TinyBuffer: tinyBuffer})
	s.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { syncEvents { type token position conversationID seq sendID seqs forEveryone maxSeq minSeq readSeq unreadCount } }`}})
	return s
}

// dialFromNow connects a client of user and subscribes it to syncEvents from the token of
// user's state now, so that it gets every event announced after the call.
func dialFromNow(t *testing.T, g *gatewaytest.Gateway, user string) *gatewaytest.WS {
	t.Helper()
	since := syncToken(g, user)
	c := gatewaytest.ConnectWS(t, g.URL, g.Token(user), gatewaytest.WSOptions{})
	c.Subscribe(&since)
	return c
}

// position returns the position of an event message ("next"), or an error for anything else.
func eventPosition(m map[string]any) (int64, error) {
	if m["type"] != "next" {
		return 0, fmt.Errorf("not an event: %v", m)
	}
	p, _ := m["payload"].(map[string]any)
	d, _ := p["data"].(map[string]any)
	ev, _ := d["syncEvents"].(map[string]any)
	pos, ok := ev["position"].(float64)
	if !ok {
		return 0, fmt.Errorf("event without a position: %v", m)
	}
	return int64(pos), nil
}

// Ensure a subscriber that stops reading is disconnected with close code 4008 and a reason
// that starts "slow consumer", while a subscriber of the same user on the same instance that
// keeps reading gets every event, in order, with no gap.
// floodLimit bounds how long a slow-consumer test floods a subscriber that stopped reading:
// well past the hub's 10 s stall timeout, which is what drops it.
const floodLimit = 90 * time.Second

func TestSubscriptionSlowConsumer(t *testing.T) {
	g := gatewaytest.Start(t)
	flood := noteToSelf(t, g, "erin")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	slow := dialRaw(t, g, "erin", true)
	defer func() { _ = slow.Conn.CloseNow() }()
	normal := dialRaw(t, g, "erin", false)
	defer func() { _ = normal.Conn.CloseNow() }()
	gatewaytest.WaitFor(t, 20*time.Second, "both subscriptions reach the hub", func() bool { return g.Hub.Subscribers() == 2 })

	// The reader keeps up; each batch of events waits until it has them all, so only the
	// subscriber that stopped reading falls behind.
	type seen struct {
		last int64
		err  error
	}
	progress := make(chan seen, 1024)
	go func() {
		var last int64
		for {
			m, err := normal.Read(ctx)
			if err != nil {
				progress <- seen{last, err}
				return
			}
			pos, err := eventPosition(m)
			if err == nil && last != 0 && pos != last+1 {
				err = fmt.Errorf("position %d after %d", pos, last)
			}
			if err != nil {
				progress <- seen{last, err}
				return
			}
			last = pos
			progress <- seen{last, nil}
		}
	}()
	var first, last int64
	produced := 0
	// The drop comes from the hub's stall timeout (10 s) once the socket's buffers are full,
	// so the flood is bounded in time: how many events fill the buffers by then depends on the
	// machine and on -race.
	floodEnd := time.Now().Add(floodLimit)
	for g.Hub.Subscribers() == 2 {
		if time.Now().After(floodEnd) {
			t.Fatalf("%d events produced in %s and the subscriber that stopped reading is still connected", produced, floodLimit)
		}
		flood(500)
		produced += 500
		head, err := g.Cache.EventHead(ctx, "erin")
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			first = head.Position - 499
		}
		for last < head.Position {
			select {
			case s := <-progress:
				if s.err != nil {
					t.Fatalf("the subscriber that reads: after position %d: %v", s.last, s.err)
				}
				last = s.last
			case <-time.After(30 * time.Second):
				t.Fatalf("the subscriber that reads is stuck at %d of %d", last, head.Position)
			}
		}
	}
	t.Logf("dropped after %d events; the reading subscriber got positions %d..%d", produced, first, last)
	if g.Hub.Subscribers() != 1 {
		t.Fatalf("%d subscribers left, want the one that reads", g.Hub.Subscribers())
	}

	// What the slow subscriber reads now: the events its socket held, then the close.
	var got int
	var others []string
	var err error
	for {
		var m map[string]any
		if m, err = slow.Read(ctx); err != nil {
			break
		}
		if _, perr := eventPosition(m); perr == nil {
			got++
		} else {
			others = append(others, fmt.Sprint(m))
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("the slow subscriber's connection ended with %v, want a close frame", err)
	}
	t.Logf("the slow subscriber read %d events, then close %d %q", got, ce.Code, ce.Reason)
	if ce.Code != 4008 || !strings.HasPrefix(ce.Reason, "slow consumer") {
		t.Errorf("closed with %d %q, want 4008 and a reason starting \"slow consumer\"", ce.Code, ce.Reason)
	}
	// A graphql-transport-ws client takes "complete" for a normal end of its subscription and
	// would not resubscribe: a dropped subscriber must learn of the drop from the close alone.
	if len(others) > 0 {
		t.Errorf("before the close the dropped subscriber was sent %v", others)
	}

	// The reader goes on receiving.
	flood(1)
	s := <-progress
	if s.err != nil || s.last != last+1 {
		t.Fatalf("after the drop the reader got %d (%v), want %d", s.last, s.err, last+1)
	}
}

// Ensure the gateway's goroutines return to their number before 20 clients connected,
// subscribed, received an event and left (half of them closing properly, half dropping the
// connection).
func TestSubscriptionGoroutinesReturnToBaseline(t *testing.T) {
	g := gatewaytest.Start(t)
	users := make([]string, 10)
	for i := range users {
		users[i] = fmt.Sprintf("sub%02d", i)
	}
	announce := map[string]func(int){}
	for _, u := range users {
		announce[u] = noteToSelf(t, g, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A first client starts what stays for the gateway's lifetime (the hub's Redis
	// subscription, its connection pools); the baseline is taken once it left and the count
	// settled.
	// Each client subscribes from a token taken before it connects: a live-only subscription
	// counts on the hub before its Redis subscription is confirmed, and would miss an event
	// announced in between.
	warm := dialFromNow(t, g, users[0])
	gatewaytest.WaitFor(t, 20*time.Second, "the first subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
	announce[users[0]](1)
	if m, err := warm.Read(ctx); err != nil || m["type"] != "next" {
		t.Fatalf("first client: %v %v", m, err)
	}
	_ = warm.Conn.Close(websocket.StatusNormalClosure, "")
	gatewaytest.WaitFor(t, 20*time.Second, "the first subscription leaves the hub", func() bool { return g.Hub.Subscribers() == 0 })
	baseline := settledGoroutines()

	clients := make([]*gatewaytest.WS, 20)
	for i := range clients {
		clients[i] = dialFromNow(t, g, users[i%len(users)])
	}
	gatewaytest.WaitFor(t, 20*time.Second, "20 subscriptions reach the hub", func() bool { return g.Hub.Subscribers() == 20 })
	during := runtime.NumGoroutine()
	for _, u := range users {
		announce[u](1)
	}
	for i, c := range clients {
		if m, err := c.Read(ctx); err != nil || m["type"] != "next" {
			t.Fatalf("client %d: %v %v", i, m, err)
		}
		if i%2 == 0 {
			_ = c.Conn.Close(websocket.StatusNormalClosure, "bye")
		} else {
			_ = c.Conn.CloseNow()
		}
	}
	gatewaytest.WaitFor(t, 20*time.Second, "every subscription leaves the hub", func() bool { return g.Hub.Subscribers() == 0 })
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatalf("%d goroutines, baseline %d (with 20 clients: %d)", runtime.NumGoroutine(), baseline, during)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("goroutines: baseline %d, with 20 subscribers %d, after they left %d", baseline, during, runtime.NumGoroutine())
}

// settledGoroutines returns the goroutine count once it stopped falling (what was winding down
// has ended).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200; i++ {
		time.Sleep(25 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return n
		}
		n = m
	}
	return n
}

// Ensure the reference client, dropped as a slow consumer (it stalls while events pour in),
// reconnects from its last token and ends at the head of the log with the server's counters.
func TestSubscriptionSlowClientReconnects(t *testing.T) {
	g := gatewaytest.Start(t)
	flood := noteToSelf(t, g, "gus")
	gus := g.Token("gus")
	var stalled atomic.Bool
	release := make(chan struct{})
	// unstall lets the client read again; the deferred stop calls it too, so that a failure
	// while it is stalled does not leave Run waiting on OnApply forever.
	unstall := sync.OnceFunc(func() { stalled.Store(false); close(release) })
	var logMu sync.Mutex
	var logs []string
	c, err := syncclient.New(g.URL, gus, syncclient.Options{
		ReconnectMin: 10 * time.Millisecond,
		Logf: func(format string, args ...any) {
			logMu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			logMu.Unlock()
		},
		OnApply: func(a syncclient.Applied) {
			if stalled.Load() {
				<-release
			}
			if err := syncclient.CheckInvariants(a); err != nil {
				t.Error(err)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		unstall()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	gatewaytest.WaitFor(t, 20*time.Second, "the client subscribes", func() bool { return g.Hub.Subscribers() == 1 })

	stalled.Store(true)
	produced := 0
	floodEnd := time.Now().Add(floodLimit)
	for g.Hub.Subscribers() == 1 {
		if time.Now().After(floodEnd) {
			t.Fatalf("%d events produced in %s and the stalled client is still subscribed", produced, floodLimit)
		}
		flood(500)
		produced += 500
	}
	unstall()
	head, err := g.Cache.EventHead(context.Background(), "gus")
	if err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 60*time.Second, "the client catches up after the drop", func() bool {
		return userCursor(c.Token()) == head.String() && c.Pending() == 0
	})
	// The client must have been disconnected and have subscribed again from a later token.
	// How it learns of the drop (the 4008 close, or a "complete" the gateway may send first:
	// see subscription_drop_test.go) does not change what it does.
	logMu.Lock()
	var subscribed, dropped, tooLong int
	for _, l := range logs {
		switch {
		case strings.HasPrefix(l, "live: TOO_LONG"):
			tooLong++
		case strings.HasPrefix(l, "subscribed to syncEvents"):
			subscribed++
		case strings.HasPrefix(l, "disconnected:"):
			dropped++
			t.Log(l)
		}
	}
	logMu.Unlock()
	// A stalled client is either dropped (4008) or, when the log moved past it while it
	// stalled, told TOO_LONG; either way it subscribes again and catches up.
	if dropped+tooLong < 1 {
		t.Errorf("the client subscribed %d times, was disconnected %d times and told TOO_LONG %d times, want one of the two",
			subscribed, dropped, tooLong)
	}
	// And it follows live events again.
	flood(1)
	next, err := g.Cache.EventHead(context.Background(), "gus")
	if err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, 30*time.Second, "the client follows live events again", func() bool {
		return userCursor(c.Token()) == next.String() && c.Pending() == 0
	})
	want, total, _ := serverCounters(t, g, gus)
	if diff := countersDiff(c.Replica(), want, total); diff != "" {
		t.Errorf("after reconnecting:\n%s", diff)
	}
	t.Logf("dropped after %d events; caught up with requests %v", produced, c.Requests())
}

// readUntilEnd reads a subscriber's messages until want events arrived or the connection
// ended, and returns how many events came, the other messages, and the end.
func readUntilEnd(ctx context.Context, s *gatewaytest.WS, want int) (events int, others []string, end error) {
	for events < want {
		m, err := s.Read(ctx)
		if err != nil {
			return events, others, err
		}
		if _, perr := eventPosition(m); perr == nil {
			events++
		} else {
			others = append(others, fmt.Sprint(m))
		}
	}
	return events, others, nil
}

// Ensure a subscriber that reads as fast as it can is not dropped as a slow consumer because
// one change produced more events at once than the hub buffers (HubOptions.Buffer, 1024): the
// log holds them all, so the subscription can catch up from it instead.
func TestSubscriptionBurstDoesNotDropAReader(t *testing.T) {
	g := gatewaytest.Start(t)
	flood := noteToSelf(t, g, "hal")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := dialRaw(t, g, "hal", false)
	defer func() { _ = s.Conn.CloseNow() }()
	gatewaytest.WaitFor(t, 20*time.Second, "the subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
	flood(2000) // one append of 2000 events
	n, _, err := readUntilEnd(ctx, s, 2000)
	if err != nil {
		t.Fatalf("a subscriber reading as fast as it can got %d of 2000 events, then: %v", n, err)
	}
}

// Ensure the legacy graphql-ws protocol (connection_init, start, data) works too, with the
// token given as {"authToken": ...}: an event sent through the other instance arrives.
func TestSubscriptionLegacyProtocol(t *testing.T) {
	gws := gatewaytest.StartPair(t, nil)
	c := gatewaytest.DialWS(t, gws[0].URL, gatewaytest.WSOptions{Protocol: "graphql-ws"})
	if c.Conn.Subprotocol() != "graphql-ws" {
		t.Fatalf("subprotocol %q, want graphql-ws", c.Conn.Subprotocol())
	}
	c.Init(map[string]any{"authToken": gws[0].Token("carol")})
	c.Write(map[string]any{"id": "1", "type": "start", "payload": map[string]any{
		"query": `subscription { syncEvents { type conversationID seq sendID unreadCount } }`}})
	gatewaytest.WaitFor(t, 20*time.Second, "the subscription never reached the hub", func() bool { return gws[0].Hub.Subscribers() > 0 })
	gws[1].SendGQL(gws[1].Token("dave"), map[string]any{"recvID": "carol", "contentType": 101, "content": "legacy"})
	m := c.Next()
	if m["type"] != "data" || m["id"] != "1" {
		t.Fatalf("got %v, want a data message for id 1", m)
	}
	b, _ := json.Marshal(m["payload"])
	var p struct {
		Data struct {
			SyncEvents struct {
				Type           string
				ConversationID string
				Seq            int64
				SendID         string
				UnreadCount    int64
			}
		}
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if ev := p.Data.SyncEvents; ev.Type != "NEW_MESSAGE" || ev.ConversationID != "si_carol_dave" || ev.Seq != 1 || ev.SendID != "dave" || ev.UnreadCount != 1 {
		t.Fatalf("event %+v", ev)
	}
	c.Write(map[string]any{"id": "1", "type": "stop"})
	if m := c.Next(); m["type"] != "complete" {
		t.Fatalf("after stop: %v", m)
	}
}

// userCursor is a sync token's entry for the user's own log (the group streams' follow it).
func userCursor(token string) string {
	user, _, _ := strings.Cut(token, ",")
	return user
}
