package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	gosync "sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
)

// wsImplementation is gqlgen's adapter of github.com/coder/websocket
// (transport.CoderWebsocketImplementation, v0.17.98), with the graphql-transport-ws keepalive
// moved into it so that an idle connection costs one goroutine fewer: gqlgen pings from a
// goroutine of its own per connection (its PingPongInterval), this pings from a timer. The
// protocol is the same: a {"type":"ping"} message every interval, and a connection that has
// not answered with a pong within twice the interval is cut off (gqlgen clears the read
// deadline set here when the pong arrives). The legacy graphql-ws protocol keeps gqlgen's
// "ka" messages (KeepAlivePingInterval).
type wsImplementation struct {
	pingInterval time.Duration
}

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	for key, values := range o.ResponseHeader {
		for _, v := range values {
			w.Header().Add(key, v)
		}
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: o.Subprotocols})
	if err != nil {
		return nil, err
	}
	c := &wsConn{conn: conn}
	if i.pingInterval > 0 && conn.Subprotocol() == "graphql-transport-ws" {
		c.pingInterval = i.pingInterval
		c.pingTimer = time.AfterFunc(i.pingInterval, c.ping)
	}
	return c, nil
}

// wsConn is one connection: gqlgen's coderWebsocketConn, plus the keepalive timer.
type wsConn struct {
	conn         *websocket.Conn
	pingInterval time.Duration

	mu                gosync.Mutex
	pingTimer         *time.Timer
	readDeadlineTimer *time.Timer
	closeHandshakeCh  chan struct{}
	closed            bool
}

var (
	_ transport.WebsocketConn          = (*wsConn)(nil)
	_ transport.WebsocketReadLimiter   = (*wsConn)(nil)
	_ transport.WebsocketReadDeadliner = (*wsConn)(nil)
)

var pingMessage = []byte(`{"type":"ping"}`)

// ping sends a ping message and schedules the next. As gqlgen does, it arms a read deadline
// two intervals ahead unless one is still armed (no pong came since it was): the deadline is
// armed before the ping goes out, so that a quick pong cannot clear it first.
func (c *wsConn) ping() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.readDeadlineTimer == nil {
		c.readDeadlineTimer = time.AfterFunc(2*c.pingInterval, func() { _ = c.conn.CloseNow() })
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.pingInterval)
	err := c.conn.Write(ctx, websocket.MessageText, pingMessage)
	cancel()
	if err != nil {
		_ = c.conn.CloseNow()
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.pingTimer.Reset(c.pingInterval)
	}
	c.mu.Unlock()
}

// stopTimersLocked stops the keepalive and the read deadline; c.mu must be held.
func (c *wsConn) stopTimersLocked() {
	c.closed = true
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	c.stopReadDeadlineTimerLocked()
}

func (c *wsConn) Close() error {
	c.mu.Lock()
	c.stopTimersLocked()
	handshakeInProgress := c.closeHandshakeCh != nil
	c.mu.Unlock()
	// A close handshake WriteClose started owns closing the connection.
	if handshakeInProgress {
		return nil
	}
	return c.conn.CloseNow()
}

func (c *wsConn) NextReader() (int, io.Reader, error) {
	messageType, data, err := c.conn.Read(context.Background())
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd:
			return int(messageType), nil, transport.ErrWebsocketClosed
		}
		return int(messageType), nil, err
	}
	return int(messageType), bytes.NewReader(data), nil
}

func (c *wsConn) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.conn.Write(context.Background(), websocket.MessageText, data)
}

// WriteClose starts the close handshake in the background: coder/websocket's Close waits up
// to 5 s for the peer's close frame, which the transport must not wait for.
func (c *wsConn) WriteClose(closeCode int, message string) error {
	c.mu.Lock()
	c.stopTimersLocked()
	if c.closeHandshakeCh != nil {
		c.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	c.closeHandshakeCh = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		_ = c.conn.Close(websocket.StatusCode(closeCode), message)
	}()
	return nil
}

func (c *wsConn) Subprotocol() string { return c.conn.Subprotocol() }

func (c *wsConn) SetReadLimit(limit int64) { c.conn.SetReadLimit(limit) }

// SetReadDeadline cuts the connection off at deadline (zero: never).
func (c *wsConn) SetReadDeadline(deadline time.Time) error {
	closeNow := false
	c.mu.Lock()
	c.stopReadDeadlineTimerLocked()
	if !deadline.IsZero() && !c.closed {
		if d := time.Until(deadline); d <= 0 {
			closeNow = true
		} else {
			c.readDeadlineTimer = time.AfterFunc(d, func() { _ = c.conn.CloseNow() })
		}
	}
	c.mu.Unlock()
	if closeNow {
		return c.conn.CloseNow()
	}
	return nil
}

func (c *wsConn) stopReadDeadlineTimerLocked() {
	if c.readDeadlineTimer != nil {
		c.readDeadlineTimer.Stop()
		c.readDeadlineTimer = nil
	}
}
