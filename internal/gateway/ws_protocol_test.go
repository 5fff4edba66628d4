package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// closeOf reads c until the gateway closes it, and returns the close frame's code and reason.
func closeOf(t *testing.T, c *gatewaytest.WS) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		if _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("the connection ended with %v, want a close frame", err)
			}
			return ce.Code, ce.Reason
		}
	}
}

// Ensure a client that breaks the graphql-transport-ws protocol is closed with the protocol's
// code for what it did, and a reason, rather than left hanging or served.
func TestWebSocketProtocolErrors(t *testing.T) {
	g := gatewaytest.Start(t)
	token := g.Token("quinn")
	subscribe := func(id string) map[string]any {
		m := map[string]any{"type": "subscribe", "payload": map[string]any{"query": `subscription { syncEvents { type } }`}}
		if id != "" {
			m["id"] = id
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		init   bool // connection_init first
		writes []any
		code   websocket.StatusCode
	}{
		{"not JSON", true, []any{"{nope"}, 4400},
		{"no type", true, []any{map[string]any{"id": "1"}}, 4400},
		{"unknown type", true, []any{map[string]any{"type": "shout"}}, 4400},
		{"subscribe before connection_init", false, []any{subscribe("1")}, 4400},
		{"subscribe without an id", true, []any{subscribe("")}, 4400},
		{"an id already running", true, []any{subscribe("1"), subscribe("1")}, 4409},
		{"a second connection_init", true, []any{map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}}, 4429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})
			if tc.init {
				c.Init(map[string]any{"Authorization": "Bearer " + token})
			}
			for _, w := range tc.writes {
				if s, ok := w.(string); ok {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					if err := c.Conn.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
						t.Fatal(err)
					}
					cancel()
					continue
				}
				c.Write(w)
			}
			code, reason := closeOf(t, c)
			if code != tc.code || reason == "" {
				t.Errorf("closed with %d %q, want %d and a reason", code, reason, tc.code)
			}
		})
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the subscriptions of the closed connections end", func() bool { return g.Hub.Subscribers() == 0 })
}

// Ensure a query over WebSocket is answered once and completed, a ping is answered with a
// pong carrying its payload, and a subscription the client completes leaves the hub and is
// completed, while the connection stays open for the next operation.
func TestWebSocketOperations(t *testing.T) {
	g := gatewaytest.Start(t)
	c := gatewaytest.ConnectWS(t, g.URL, g.Token("rosa"), gatewaytest.WSOptions{})

	c.Write(map[string]any{"id": "q", "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
	m := c.Next()
	if m["type"] != "next" || m["id"] != "q" {
		t.Fatalf("got %v, want the query's answer", m)
	}
	if p, _ := m["payload"].(map[string]any); p["data"] == nil {
		t.Fatalf("the query's answer has no data: %v", m)
	}
	if m := c.Next(); m["type"] != "complete" || m["id"] != "q" {
		t.Fatalf("got %v, want complete for q", m)
	}

	// Read skips pongs; read this one raw.
	c.Write(map[string]any{"type": "ping", "payload": map[string]any{"n": 7}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Conn.Read(ctx)
	if err != nil || string(b) != `{"type":"pong","payload":{"n":7}}` {
		t.Fatalf("after a ping: %s, %v; want a pong with its payload", b, err)
	}

	c.Subscribe(nil)
	gatewaytest.WaitFor(t, 20*time.Second, "the subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
	c.Write(map[string]any{"id": "1", "type": "complete"})
	if m := c.Next(); m["type"] != "complete" || m["id"] != "1" {
		t.Fatalf("got %v, want complete for 1", m)
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the completed subscription leaves the hub", func() bool { return g.Hub.Subscribers() == 0 })

	// The same id may be used again once its operation is over.
	c.Subscribe(nil)
	gatewaytest.WaitFor(t, 20*time.Second, "the second subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
}
