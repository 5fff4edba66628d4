package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/devtools/graphqltest"
)

// startServer serves the handler over a resolver of an empty store on a real HTTP server.
func startServer(t *testing.T, settings Settings) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler(&graph.Resolver{Conversations: noConversations{}}, settings, testDependencies()))
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to srv with token ("" for none) and returns the status and the decoded answer.
func post(t *testing.T, srv *httptest.Server, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %q (HTTP %d): %v", b, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// Ensure the POST transport answers a query as its token's user, refuses what needs a user
// without a token, a subscription, a body that is not JSON and one over the size limit, each
// with the status and error code a client reads.
func TestPOSTTransport(t *testing.T) {
	srv := startServer(t, Settings{RateLimit: -1, MaxBodyBytes: 200})
	alice := testToken(t, "alice")

	status, out := post(t, srv, alice, `{"query":"{ viewer { userID } }"}`)
	if status != http.StatusOK || out["errors"] != nil ||
		out["data"].(map[string]any)["viewer"].(map[string]any)["userID"] != "alice" {
		t.Errorf("a query as alice: HTTP %d %v, want 200 and alice's userID", status, out)
	}
	if status, out := post(t, srv, "", `{"query":"{ viewer { userID } }"}`); status != http.StatusOK || graphqltest.ErrorCodes(out) != graph.CodeUnauthenticated {
		t.Errorf("without a token: HTTP %d %v, want 200 UNAUTHENTICATED", status, out)
	}
	if status, out := post(t, srv, alice, `{"query":"subscription { syncEvents { type } }"}`); status != http.StatusBadRequest || graphqltest.ErrorCodes(out) != graph.CodeUnsupported {
		t.Errorf("a subscription: HTTP %d %v, want 400 UNSUPPORTED", status, out)
	}
	if status, out := post(t, srv, alice, `{"query":`); status != http.StatusBadRequest || out["errors"] == nil {
		t.Errorf("a body that is not JSON: HTTP %d %v, want 400 and an error", status, out)
	}
	big := `{"query":"{ viewer { userID } }","variables":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	if status, out := post(t, srv, alice, big); status != http.StatusRequestEntityTooLarge || graphqltest.ErrorCodes(out) != graph.CodeLimitExceeded {
		t.Errorf("a body over MaxBodyBytes: HTTP %d %v, want 413 LIMIT_EXCEEDED", status, out)
	}
}

// wsClient is one WebSocket connection to the handler, speaking protocol.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, srv *httptest.Server, protocol string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{protocol}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	if conn.Subprotocol() != protocol {
		t.Fatalf("subprotocol %q, want %q", conn.Subprotocol(), protocol)
	}
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(m map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next message that is not a keepalive, or the error that ended the
// connection.
func (c *wsClient) read() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("message %q: %v", b, err)
		}
		if m["type"] != "ka" && m["type"] != "ping" {
			return m, nil
		}
	}
}

func (c *wsClient) expect(typ string) map[string]any {
	c.t.Helper()
	m, err := c.read()
	if err != nil || m["type"] != typ {
		c.t.Fatalf("got %v (%v), want %q", m, err, typ)
	}
	return m
}

// Ensure both WebSocket protocols authenticate at connection_init, answer a query as the
// token's user and then complete it, and carry a subscription's refusal from the resolver
// (this resolver has no event log) to the client.
func TestWebSocketTransport(t *testing.T) {
	srv := startServer(t, testSettings())
	for _, p := range []struct{ protocol, start, data string }{
		{protocolTransportWS, "subscribe", "next"},
		{protocolLegacyWS, "start", "data"},
	} {
		t.Run(p.protocol, func(t *testing.T) {
			c := dialWS(t, srv, p.protocol)
			c.send(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + testToken(t, "alice")}})
			c.expect("connection_ack")

			c.send(map[string]any{"type": p.start, "id": "1", "payload": map[string]any{"query": "{ viewer { userID } }"}})
			m := c.expect(p.data)
			data, _ := m["payload"].(map[string]any)["data"].(map[string]any)
			if m["id"] != "1" || data == nil || data["viewer"].(map[string]any)["userID"] != "alice" {
				t.Errorf("answer %v, want alice's userID for id 1", m)
			}
			c.expect("complete")

			c.send(map[string]any{"type": p.start, "id": "2", "payload": map[string]any{"query": "subscription { syncEvents { type } }"}})
			m = c.expect(p.data)
			if graphqltest.ErrorCodes(m["payload"].(map[string]any)) != graph.CodeUnsupported {
				t.Errorf("a subscription without an event log: %v, want UNSUPPORTED", m)
			}
			c.expect("complete")
		})
	}
}

// Ensure a connection_init without a token, or with one the gateway did not issue, closes
// the connection with CloseUnauthorized, and that graphql-ws is told why first.
func TestWebSocketRefusesInitWithoutAValidToken(t *testing.T) {
	srv := startServer(t, testSettings())
	for name, payload := range map[string]map[string]any{
		"no token":  nil,
		"bad token": {"Authorization": "Bearer not-a-token"},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialWS(t, srv, protocolTransportWS)
			c.send(map[string]any{"type": "connection_init", "payload": payload})
			_, err := c.read()
			if code := websocket.CloseStatus(err); code != CloseUnauthorized {
				t.Errorf("closed with %d (%v), want %d", code, err, CloseUnauthorized)
			}

			legacy := dialWS(t, srv, protocolLegacyWS)
			legacy.send(map[string]any{"type": "connection_init", "payload": payload})
			m, err := legacy.read()
			if err != nil || m["type"] != "connection_error" {
				t.Errorf("graphql-ws got %v (%v), want connection_error", m, err)
			}
			if _, err := legacy.read(); websocket.CloseStatus(err) != CloseUnauthorized {
				t.Errorf("graphql-ws closed with %v, want %d", err, CloseUnauthorized)
			}
		})
	}
}

// Ensure a connection's first message must be connection_init, and that an operation sent
// with an id already running closes the connection with the protocol's codes.
func TestWebSocketProtocolErrors(t *testing.T) {
	srv := startServer(t, testSettings())
	c := dialWS(t, srv, protocolTransportWS)
	c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": "{ viewer { userID } }"}})
	if _, err := c.read(); websocket.CloseStatus(err) != CloseBadMessage {
		t.Errorf("subscribe before connection_init: %v, want close %d", err, CloseBadMessage)
	}

	c = dialWS(t, srv, protocolTransportWS)
	c.send(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + testToken(t, "alice")}})
	c.expect("connection_ack")
	c.send(map[string]any{"type": "connection_init"})
	_, err := c.read()
	var ce websocket.CloseError
	if !errors.As(err, &ce) || int(ce.Code) != CloseTooManyInits {
		t.Errorf("a second connection_init: %v, want close %d", err, CloseTooManyInits)
	}
}
