package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/server"
)

// outageCalls are the operations a device makes, each of which must fail as UNAVAILABLE, with
// a retry hint, or succeed, while a store is down: never INTERNAL.
var outageCalls = []struct {
	name, query string
	vars        map[string]any
}{
	{"history page", `query($id: ID!) { conversation(id: $id) { history(limit: 20) { messages { seq content } } } }`, map[string]any{"id": "si_alice_bob"}},
	{"messages", gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2}}},
	{"conversation list", gatewaytest.ViewerQuery, map[string]any{"first": 20}},
	{"sendMessage", gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "during"}}},
	{"markRead", `mutation($c: ID!) { markConversationRead(conversationID: $c) { readSeq } }`, map[string]any{"c": "si_alice_bob"}},
	{"syncState", `{ syncState(first: 10) { token totalUnread } }`, nil},
}

// callDuringOutage runs every outage call as alice and checks each failure; it returns how
// many failed.
func callDuringOutage(t *testing.T, g *gatewaytest.Gateway, what string) int {
	t.Helper()
	alice := g.Token("alice")
	failed := 0
	for _, c := range outageCalls {
		began := time.Now()
		resp, r, err := gatewaytest.Call(g.URL, alice, "", c.query, c.vars)
		if err != nil {
			t.Fatalf("%s, %s: %v", what, c.name, err)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("%s, %s: answered after %v", what, c.name, took)
		}
		if len(r.Errors) > 0 {
			failed++
		}
		for _, e := range r.Errors {
			if e.Extensions["code"] != "UNAVAILABLE" || e.Extensions["retryAfterMs"] == nil {
				t.Errorf("%s, %s: error %q %v, want UNAVAILABLE with retryAfterMs", what, c.name, e.Message, e.Extensions)
			}
		}
		if len(r.Errors) > 0 && string(r.Data) == "null" && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s, %s: nothing answered, status %d, want 503", what, c.name, resp.StatusCode)
		}
	}
	return failed
}

// outageConfig is a gateway's configuration on the FerretDB process srv, with its own Redis.
func outageConfig(srv *testenv.FerretDBServer, rs *testenv.RedisServer, db string) gateway.Config {
	return gateway.Config{
		Addr: "127.0.0.1:0", MongoURI: srv.URI(), MongoDatabase: db, RedisURL: rs.URL(),
		JWTSecret: gatewaytest.Secret,
		Handler:   server.Settings{RateLimit: -1, AnonymousRateLimit: -1, RequestTimeout: 10 * time.Second},
	}
}

// Ensure that a store killed, or Redis killed, makes every failing operation UNAVAILABLE with
// a retry hint (never INTERNAL) and answers quickly; and that a gateway started while the store
// is down answers within 2 s, and serves once the store is back.
func TestUnavailableOutages(t *testing.T) {
	srv, err := testenv.StartFerretDBServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Kill)
	rs := testenv.Redis(t)

	t.Run("store killed", func(t *testing.T) {
		g := gatewaytest.New(t, outageConfig(srv, rs, "outage_store"))
		g.Send("alice", "bob", "", 2)
		srv.Kill()
		if err := rs.FlushAll(); err != nil { // so that reads need the store
			t.Fatal(err)
		}
		if failed := callDuringOutage(t, g, "store killed"); failed == 0 {
			t.Error("every call succeeded with the store killed and Redis empty")
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		alice := g.Token("alice")
		gatewaytest.WaitFor(t, 20*time.Second, "the gateway does not serve once the store is back", func() bool {
			return len(g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "after"}}).Errors) == 0
		})
	})

	t.Run("redis killed", func(t *testing.T) {
		g := gatewaytest.New(t, outageConfig(srv, rs, "outage_redis"))
		g.Send("alice", "bob", "", 2)
		rs.Stop()
		if failed := callDuringOutage(t, g, "redis killed"); failed == 0 {
			t.Error("every call succeeded with Redis killed (sends need it)")
		}
		rs.Start()
		alice := g.Token("alice")
		gatewaytest.WaitFor(t, 20*time.Second, "the gateway does not serve once Redis is back", func() bool {
			return len(g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "after"}}).Errors) == 0
		})
	})

	t.Run("start while the store is down", func(t *testing.T) {
		srv.Kill()
		if err := rs.FlushAll(); err != nil { // the seqs the other subtests allocated
			t.Fatal(err)
		}
		began := time.Now()
		gw, err := gateway.Open(context.Background(), outageConfig(srv, rs, "outage_start"), gatewaytest.Logger(t))
		if err != nil {
			t.Fatalf("Open with the store down: %v", err)
		}
		t.Cleanup(func() { _ = gw.Close() })
		g := &gatewaytest.Gateway{Gateway: gw, T: t, URL: gatewaytest.Serve(t, gw)}
		resp, err := http.Get(g.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/readyz with the store down: %d, want 503", resp.StatusCode)
		}
		if code := g.ErrorCode(g.Token("alice"), gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "x"}}); code != "UNAVAILABLE" {
			t.Errorf("a send before the store is up: %s, want UNAVAILABLE", code)
		}
		if took := time.Since(began); took > 2*time.Second {
			t.Errorf("started and answered after %v, want within 2 s", took)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		gatewaytest.WaitFor(t, 20*time.Second, "/readyz does not answer 200 once the store is up", func() bool {
			resp, err := http.Get(g.URL + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if m := g.SendGQL(g.Token("alice"), map[string]any{"recvID": "bob", "contentType": 101, "content": "y"}); m.Seq != 1 {
			t.Errorf("first send once the store is up: seq %d, want 1", m.Seq)
		}
	})
}
