package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// storeGate holds back every MongoDB command the gateway sends while it is closed: the store,
// as the gateway sees it, has stopped answering (the commands reach the real FerretDB once
// it opens again).
type storeGate struct {
	closed atomic.Bool
	mu     sync.Mutex
	open   chan struct{}
}

func newStoreGate() *storeGate { return &storeGate{open: make(chan struct{})} }

func (s *storeGate) hold(ctx context.Context, _, _ string) {
	if !s.closed.Load() {
		return
	}
	s.mu.Lock()
	open := s.open
	s.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
	}
}

func (s *storeGate) close() { s.closed.Store(true) }

func (s *storeGate) reopen() {
	s.closed.Store(false)
	s.mu.Lock()
	close(s.open)
	s.open = make(chan struct{})
	s.mu.Unlock()
}

// refusedAtOnce checks one answer of a refusal: HTTP 503, Retry-After in whole seconds,
// code UNAVAILABLE with retryAfterMs matching it, and no data.
func refusedAtOnce(t *testing.T, what string, resp *http.Response, r gatewaytest.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("%s: status %d, want 503 (%+v)", what, resp.StatusCode, r.Errors)
		return
	}
	after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || after < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds", what, resp.Header.Get("Retry-After"))
	}
	if len(r.Errors) == 0 {
		t.Fatalf("%s: 503 without an error", what)
	}
	e := r.Errors[0]
	ms, _ := e.Extensions["retryAfterMs"].(float64)
	if e.Extensions["code"] != "UNAVAILABLE" || ms <= 0 || int(ms+999)/1000 > after {
		t.Errorf("%s: error %q %v, want UNAVAILABLE with retryAfterMs within Retry-After %ds", what, e.Message, e.Extensions, after)
	}
}

// Ensure that when the store stops answering, requests that need it are refused at once with
// 503, Retry-After and retryAfterMs, long before their time limit, over POST and WebSocket
// alike; and that the gateway serves them again once the store answers.
func TestOverloadRefusesEarly(t *testing.T) {
	gate := newStoreGate()
	g := gatewaytest.StartObserved(t, gateway.Observers{OnMongoCommand: gate.hold}, func(c *gateway.Config) {
		c.StoreConcurrency = 2
		c.AdmissionWait = 300 * time.Millisecond
		c.Handler.RequestTimeout = 10 * time.Second
		c.Handler.RateLimit = -1
	})
	alice, bob := g.Token("alice"), g.Token("bob")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})

	gate.close()
	// Two sends take the two slots and hang in the store.
	var stuck sync.WaitGroup
	for i := range 2 {
		stuck.Go(func() {
			r := g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{
				"recvID": "bob", "contentType": 101, "content": "stuck", "clientMsgID": fmt.Sprint("stuck-", i)}})
			if len(r.Errors) > 0 {
				t.Errorf("a send held in the store failed once it answered: %+v", r.Errors)
			}
		})
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the sends do not reach the store", func() bool {
		return g.StoreAdmission.Stats().InFlight == 2
	})
	time.Sleep(400 * time.Millisecond) // nothing came free for longer than the longest wait: stalled; what is stuck is older than the longest wait allowed

	// A burst: sends, and reads that miss Redis, from several users.
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	type call struct {
		token, query string
		vars         map[string]any
	}
	var calls []call
	for i := range 10 {
		calls = append(calls,
			call{alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "burst", "clientMsgID": fmt.Sprint("burst-", i)}}},
			call{bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1}}},
			call{bob, `{ syncState(first: 10) { token } }`, nil})
	}
	var burst sync.WaitGroup
	for _, c := range calls {
		burst.Go(func() {
			began := time.Now()
			resp, r, err := gatewaytest.Call(g.URL, c.token, "", c.query, c.vars)
			if err != nil {
				t.Error(err)
				return
			}
			if took := time.Since(began); took > time.Second {
				t.Errorf("%.30s: answered after %v, want well within 1 s of a 10 s limit", c.query, took)
			}
			refusedAtOnce(t, c.query[:20], resp, r)
		})
	}
	burst.Wait()

	// Over WebSocket the error carries the same hint.
	ws := gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})
	ws.Write(map[string]any{"id": "q", "type": "subscribe", "payload": map[string]any{"query": `{ syncState(first: 10) { token } }`}})
	m := ws.Next()
	b, _ := json.Marshal(m["payload"])
	var errs []gatewaytest.Error
	if m["type"] == "next" {
		var p gatewaytest.Response
		_ = json.Unmarshal(b, &p)
		errs = p.Errors
	} else {
		_ = json.Unmarshal(b, &errs)
	}
	if len(errs) == 0 || errs[0].Extensions["code"] != "UNAVAILABLE" || errs[0].Extensions["retryAfterMs"] == nil {
		t.Errorf("over WebSocket: %v, want UNAVAILABLE with retryAfterMs", m)
	}

	gate.reopen()
	stuck.Wait()
	gatewaytest.WaitFor(t, 10*time.Second, "requests still refused once the store answers", func() bool {
		return len(g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "after"}}).Errors) == 0
	})
	if s := g.StoreAdmission.Stats(); s.Refused == 0 || s.InFlight != 0 || s.Queued != 0 {
		t.Errorf("limiter after: %+v", s)
	}
}

// Ensure new WebSocket connections beyond the accepted pace are closed at connection_init
// with 1013 and the retry hint in the reason, and that a client that waits the hint gets in.
func TestOverloadPacesNewConnections(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.ConnectionRate = 2
		c.Handler.ConnectionBurst = 1
	})
	alice := g.Token("alice")
	gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})

	ws := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})
	ws.Write(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + alice}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ws.Read(ctx)
	var closed websocket.CloseError
	if !errors.As(err, &closed) || closed.Code != 1013 {
		t.Fatalf("a connection over the pace: %v, want close 1013", err)
	}
	i := strings.Index(closed.Reason, "retryAfterMs=")
	if i < 0 {
		t.Fatalf("close reason %q carries no retryAfterMs", closed.Reason)
	}
	ms, err := strconv.Atoi(closed.Reason[i+len("retryAfterMs="):])
	if err != nil || ms <= 0 || ms > 500 {
		t.Fatalf("close reason %q: want a hint of at most 500 ms (2 a second)", closed.Reason)
	}
	time.Sleep(time.Duration(ms)*time.Millisecond + 50*time.Millisecond)
	gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})
}

// Ensure the operations that need the store are let in only as many at a time as
// -store-requests says, for their whole run: with one send held in the store, the next is
// refused at once with 503 and a hint once its wait for a turn would pass 500 ms, and is served
// when the store answers again. A read that Redis serves is not held back.
func TestOverloadBoundsRequestsThatNeedTheStore(t *testing.T) {
	gate := newStoreGate()
	g := gatewaytest.StartObserved(t, gateway.Observers{OnMongoCommand: gate.hold}, func(c *gateway.Config) {
		c.StoreRequests = 1
		c.Handler.RequestTimeout = 10 * time.Second
		c.Handler.RateLimit = -1
	})
	alice, bob := g.Token("alice"), g.Token("bob")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})
	g.Conversation(bob, "si_alice_bob") // cached

	gate.close()
	var stuck sync.WaitGroup
	stuck.Go(func() {
		r := g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "held"}})
		if len(r.Errors) > 0 {
			t.Errorf("the held send failed once the store answered: %+v", r.Errors)
		}
	})
	gatewaytest.WaitFor(t, 10*time.Second, "the send does not take its turn", func() bool {
		return g.StoreRequests.Stats().InFlight == 1
	})
	// Its turn is held past the longest wait: what comes now cannot be let in within it.
	time.Sleep(1200 * time.Millisecond)
	began := time.Now()
	resp, r, err := gatewaytest.Call(g.URL, alice, "", gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "next"}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Errorf("the second send was answered after %v, want well within the 500 ms wait for a turn and the time to answer", took)
	}
	refusedAtOnce(t, "a send while another holds the only turn", resp, r)
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 1 {
		t.Errorf("a cached read while the store is held: %+v", c)
	}
	gate.reopen()
	stuck.Wait()
	if m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "after"}); m.Seq != 3 {
		t.Errorf("the send after the store answered again got seq %d, want 3", m.Seq)
	}
}

// Ensure a gateway that has been idle since it started takes a burst of sends as a burst: the
// sends beyond the store's turns wait for one, and are not refused at once as if the store had
// stopped answering because none has finished yet. (A refusal after a send waited its longest
// wait for a turn is admission doing its job on a slow machine; one at once is the misreading.)
func TestOverloadColdStartBurstIsAdmitted(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.RateLimit = -1
	})
	users := []string{"alice", "bob", "carol", "dave"}
	tokens := map[string]string{}
	for _, user := range users {
		tokens[user] = g.Token(user)
	}
	// Idle for longer than the longest wait for a turn, as a gateway is between its start and
	// its first clients.
	time.Sleep(gateway.StoreRequestWait + 200*time.Millisecond)

	burst := 2 * gateway.DefaultStoreRequests
	type outcome struct {
		took    time.Duration
		refused bool
		errs    []gatewaytest.Error
	}
	outcomes := make([]outcome, burst)
	var wg sync.WaitGroup
	for i := range burst {
		from, to := users[i%len(users)], users[(i+1)%len(users)]
		wg.Go(func() {
			began := time.Now()
			resp, r, err := gatewaytest.Call(g.URL, tokens[from], "", gatewaytest.SendMutation,
				map[string]any{"in": map[string]any{"recvID": to, "contentType": 101, "content": fmt.Sprintf("burst %d", i)}})
			if err != nil {
				t.Error(err)
				return
			}
			outcomes[i] = outcome{took: time.Since(began), refused: resp.StatusCode == http.StatusServiceUnavailable, errs: r.Errors}
		})
	}
	wg.Wait()
	served := 0
	for i, o := range outcomes {
		switch {
		case o.refused && o.took < gateway.StoreRequestWait/2:
			t.Errorf("send %d of the burst was refused after %v, without waiting for a turn: %+v", i, o.took, o.errs)
		case o.refused:
			t.Logf("send %d was refused after waiting %v for a turn (a slow machine)", i, o.took)
		case len(o.errs) > 0:
			t.Errorf("send %d failed: %+v", i, o.errs)
		default:
			served++
		}
	}
	if served < gateway.DefaultStoreRequests {
		t.Errorf("%d of %d sends served, want at least the %d that find a turn free", served, burst, gateway.DefaultStoreRequests)
	}
}
