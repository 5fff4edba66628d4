package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/server"
)

// serveForReal opens a gateway and serves it with Serve, the server `go run .` runs, rather
// than a test server, so that the server's own timeouts apply.
func serveForReal(t *testing.T, tune func(*gateway.Config)) *gatewaytest.Gateway {
	t.Helper()
	rs := testenv.Redis(t)
	cfg := gatewaytest.Config(rs.URL(), testenv.Mongo(t))
	if tune != nil {
		tune(&cfg)
	}
	m := gatewaytest.Open(t, cfg, gatewaytest.Logger(t))
	ctx, stop := context.WithCancel(context.Background())
	addrc, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- m.Serve(ctx, func(addr string) { addrc <- addr }) }()
	t.Cleanup(func() { stop(); <-served })
	return &gatewaytest.Gateway{Gateway: m, T: t, URL: "http://" + <-addrc, Redis: rs}
}

// closedWithin reads conn until the server closes it and fails unless that happens within
// limit; it returns how long it took.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", limit)
	}
	return time.Since(start)
}

// Ensure an idle keep-alive connection and a request that is never sent in full are closed
// by the server's timeouts, while a WebSocket connection lives on past the read timeout.
func TestHTTPServerTimeouts(t *testing.T) {
	const idle, read = 300 * time.Millisecond, 500 * time.Millisecond
	g := serveForReal(t, func(c *gateway.Config) { c.IdleTimeout, c.ReadTimeout = idle, read })
	addr := strings.TrimPrefix(g.URL, "http://")

	t.Run("idle connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: msggate\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz over a raw connection: %v %v", resp, err)
		}
		_ = resp.Body.Close()
		if took := closedWithin(t, conn, 10*time.Second); took < idle/2 {
			t.Errorf("closed after %v, before the idle timeout %v", took, idle)
		}
	})

	t.Run("request never finished", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "POST /query HTTP/1.1\r\nHost: msggate\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		closedWithin(t, conn, 10*time.Second)
	})

	t.Run("WebSocket outlives the read timeout", func(t *testing.T) {
		ws := gatewaytest.ConnectWS(t, g.URL, g.Token("bob"), gatewaytest.WSOptions{})
		time.Sleep(2 * read)
		ws.Subscribe(nil)
		gatewaytest.WaitFor(t, 10*time.Second, "the subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
		g.Send("alice", "bob", "", 1)
		if ev := ws.NextEvent(); ev.Type != "NEW_MESSAGE" {
			t.Fatalf("event %+v, want NEW_MESSAGE", ev)
		}
	})
}

// initAndWaitForClose sends connection_init with token and returns the close status of the
// connection, -1 when it was acknowledged instead.
func initAndWaitForClose(t *testing.T, ws *gatewaytest.WS, token string) websocket.StatusCode {
	t.Helper()
	ws.Write(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := ws.Read(ctx)
	if err == nil && m["type"] == "connection_ack" {
		return -1
	}
	for err == nil {
		_, err = ws.Read(ctx)
	}
	return websocket.CloseStatus(err)
}

// Ensure a user holds at most the configured WebSocket connections (one more is closed with
// 4429 at connection_init, and a slot frees when one closes), an address holds at most the
// configured connections waiting for connection_init (one more upgrade answers HTTP 429 with
// LIMIT_EXCEEDED), other users are not held back, and both refusals are counted in /metrics.
func TestWebSocketConnectionLimits(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.MaxConnectionsPerUser, c.Handler.MaxPendingConnectionsPerAddress = 2, 2
	})
	alice := g.Token("alice")

	t.Run("per user", func(t *testing.T) {
		first := gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})
		gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})
		third := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})
		if code := initAndWaitForClose(t, third, alice); code != server.CloseTooManyConnections {
			t.Fatalf("a third connection of alice: close status %d, want %d", code, server.CloseTooManyConnections)
		}
		gatewaytest.ConnectWS(t, g.URL, g.Token("bob"), gatewaytest.WSOptions{})

		_ = first.Conn.Close(websocket.StatusNormalClosure, "")
		gatewaytest.WaitFor(t, 10*time.Second, "alice's closed connection frees its slot", func() bool {
			return initAndWaitForClose(t, gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{}), alice) == -1
		})
	})

	t.Run("waiting for connection_init per address", func(t *testing.T) {
		waiting := []*gatewaytest.WS{gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{}), gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, resp, err := websocket.Dial(ctx, strings.Replace(g.URL, "http", "ws", 1)+"/query",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err == nil {
			_ = conn.CloseNow()
			t.Fatal("a third connection waiting for connection_init was accepted")
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("third upgrade: %v %v, want HTTP 429", resp, err)
		}
		var body gatewaytest.Response
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("the 429 is not a GraphQL answer: %v", err)
		}
		refusedBy(t, body, "pendingConnections")

		waiting[0].Init(map[string]any{"Authorization": "Bearer " + g.Token("carol")})
		gatewaytest.ConnectWS(t, g.URL, g.Token("dave"), gatewaytest.WSOptions{})
	})

	metrics := scrapeMetrics(g)
	for _, limit := range []string{"userConnections", "pendingConnections"} {
		// Waiting for alice's slot to free may have been refused again meanwhile.
		if n := metrics[`msggate_limit_refusals_total{limit="`+limit+`"}`]; n < 1 {
			t.Errorf("refusals by %s in /metrics: %v, want at least 1", limit, n)
		}
	}
}

// Ensure requests without a valid token are limited per client address, with the proxy's
// header when one is configured (only its last address counts), while authenticated requests
// and WebSocket upgrades from the same address are not held back.
func TestAnonymousRateLimit(t *testing.T) {
	// At 0.001 requests a second the bucket does not refill while the test runs.
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.AnonymousRateLimit, c.Handler.AnonymousRateBurst = 0.001, 3 })
	const q = `{ __typename }`
	for i := range 3 {
		if r := g.Post("", q, nil); len(r.Errors) > 0 {
			t.Fatalf("anonymous request %d of a burst of 3: %+v", i+1, r.Errors)
		}
	}
	for name, token := range map[string]string{"no token": "", "a forged token": "x.y.z"} {
		resp, r := g.PostBody(token, requestBody(q, nil, nil))
		refusedBy(t, r, "anonymousRate")
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s: status %d, want 429", name, resp.StatusCode)
		}
		if after, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || after < 999 {
			t.Errorf("%s: Retry-After %q, want about 1000 seconds", name, resp.Header.Get("Retry-After"))
		}
	}
	if r := g.Post(g.Token("alice"), q, nil); len(r.Errors) > 0 {
		t.Errorf("an authenticated request from the same address is held back: %+v", r.Errors)
	}
	gatewaytest.ConnectWS(t, g.URL, g.Token("alice"), gatewaytest.WSOptions{})
	if n := scrapeMetrics(g)[`msggate_limit_refusals_total{limit="anonymousRate"}`]; n != 2 {
		t.Errorf("anonymous refusals in /metrics: %v, want 2", n)
	}

	t.Run("behind a proxy", func(t *testing.T) {
		in := twin(g, func(c *gateway.Config) { c.Handler.ClientIPHeader = "X-Forwarded-For" })
		post := func(forwarded string) int {
			req, _ := http.NewRequest(http.MethodPost, in.URL+"/query", strings.NewReader(string(requestBody(q, nil, nil))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", forwarded)
			resp, _ := in.Do(req, "")
			return resp.StatusCode
		}
		for i := range 3 {
			if code := post("203.0.113.9"); code != http.StatusOK {
				t.Fatalf("request %d from 203.0.113.9: %d", i+1, code)
			}
		}
		if code := post("192.0.2.1, 203.0.113.9"); code != http.StatusTooManyRequests {
			t.Errorf("a client-written address before the proxy's: %d, want 429 (the proxy's address counts)", code)
		}
		if code := post("198.51.100.7"); code != http.StatusOK {
			t.Errorf("another client behind the proxy: %d, want 200", code)
		}
		for i := range 3 {
			if code := post("2001:db8:1:2::" + strconv.Itoa(i+1)); code != http.StatusOK {
				t.Fatalf("IPv6 request %d: %d", i+1, code)
			}
		}
		if code := post("2001:db8:1:2:ffff::1"); code != http.StatusTooManyRequests {
			t.Errorf("another address of the same IPv6 /64: %d, want 429", code)
		}
	})
}
