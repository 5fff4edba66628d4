package gatewaytest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/graph/model"
)

// SyncEventFields are the fields of a syncEvents payload that Subscribe asks for.
const SyncEventFields = `type token position conversationID seq sendID seqs maxSeq minSeq readSeq unreadCount`

// WS is a client of a gateway's WebSocket endpoint, speaking graphql-transport-ws (or the
// legacy graphql-ws) with nothing in between: the test decides when it reads.
type WS struct {
	T    testing.TB
	Conn *websocket.Conn
}

// WSOptions configures DialWS. The zero value dials graphql-transport-ws.
type WSOptions struct {
	// Protocol is the WebSocket subprotocol. Default "graphql-transport-ws".
	Protocol string
	// Header is sent with the upgrade request.
	Header http.Header
	// TinyBuffer makes the socket's receive buffer as small as the kernel allows, so that a
	// client that stops reading pushes back on the gateway at once.
	TinyBuffer bool
}

// DialWS connects to the WebSocket endpoint of the gateway at url (http://...), without
// initialising the connection. The connection is closed when the test ends.
func DialWS(t testing.TB, url string, opts WSOptions) *WS {
	t.Helper()
	if opts.Protocol == "" {
		opts.Protocol = "graphql-transport-ws"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := &websocket.DialOptions{Subprotocols: []string{opts.Protocol}, HTTPHeader: opts.Header}
	if opts.TinyBuffer {
		d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			return errors.Join(err, serr)
		}}
		tr := &http.Transport{DialContext: d.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		dial.HTTPClient = &http.Client{Transport: tr}
	}
	conn, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1)+"/query", dial)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &WS{T: t, Conn: conn}
}

// ConnectWS dials like DialWS and initialises the connection with token as the
// Authorization of connection_init.
func ConnectWS(t testing.TB, url, token string, opts WSOptions) *WS {
	t.Helper()
	c := DialWS(t, url, opts)
	c.Init(map[string]any{"Authorization": "Bearer " + token})
	return c
}

// Init sends connection_init with payload and waits for connection_ack.
func (c *WS) Init(payload map[string]any) {
	c.T.Helper()
	c.Write(map[string]any{"type": "connection_init", "payload": payload})
	if m := c.Next(); m["type"] != "connection_ack" {
		c.T.Fatalf("after connection_init: %v", m)
	}
}

// Write sends one message.
func (c *WS) Write(v any) {
	c.T.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.T.Fatal(err)
	}
}

// Read returns the next message that is not a keepalive, answering pings.
func (c *WS) Read(ctx context.Context) (map[string]any, error) {
	for {
		_, b, err := c.Conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		switch m["type"] {
		case "ping":
			c.Write(map[string]any{"type": "pong"})
		case "pong", "ka":
		default:
			return m, nil
		}
	}
}

// Next is Read that waits at most 10 seconds and fails the test when nothing comes.
func (c *WS) Next() map[string]any {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		c.T.Fatalf("read: %v", err)
	}
	return m
}

// Subscribe subscribes (as operation "1") to syncEvents from the token since, or live only
// when since is nil.
func (c *WS) Subscribe(since *string) {
	vars := map[string]any{}
	if since != nil {
		vars["since"] = *since
	}
	c.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($since: String) { syncEvents(since: $since) { ` + SyncEventFields + ` } }`, "variables": vars}})
}

// NextEvent reads the next syncEvents payload.
func (c *WS) NextEvent() model.SyncEvent {
	c.T.Helper()
	m := c.Next()
	if m["type"] != "next" && m["type"] != "data" {
		c.T.Fatalf("expected an event, got %v", m)
	}
	b, _ := json.Marshal(m["payload"])
	var p struct {
		Data struct {
			SyncEvents model.SyncEvent `json:"syncEvents"`
		} `json:"data"`
		Errors []Error `json:"errors"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.Errors) > 0 {
		c.T.Fatalf("event payload %s: %v %v", b, err, p.Errors)
	}
	return p.Data.SyncEvents
}
