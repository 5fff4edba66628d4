package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/syncclient"
)

// The subscription each device holds: no since (only new events), and only the fields the
// bench reads, so that the changing token and position fields do not matter to it.
const subscribeQuery = `subscription FanoutEvents { syncEvents { type conversationID seq } }`

// connectWithin bounds how long one device keeps trying to connect and subscribe: a gateway
// taking thousands of connections at once may pace them (1013 and a hint) for a while.
const connectWithin = 3 * time.Minute

// device is one member's device: a WebSocket with a live syncEvents subscription that notes
// when each of the group's new messages arrived.
type device struct {
	user, token, url string
	conv             string // the group's conversation

	mu      sync.Mutex
	arrived map[int64]time.Time // seq -> when its NEW_MESSAGE was read
	ended   error               // why the device gave up before the bench closed it
	// reconnects counts the times its connection or subscription ended before the bench
	// closed it, and it connected again.
	reconnects int
	dropped    error // why it last had to
	conn       *websocket.Conn
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// connect opens the device's WebSocket, authenticates and subscribes, retrying what fails
// (after the gateway's hint for a 429 or 503 to the upgrade or a 1013 close), then reads its
// events until ctx ends.
func (d *device) connect(ctx context.Context) error {
	backoff := syncclient.Backoff{Min: 100 * time.Millisecond, Max: 3 * time.Second}
	deadline := time.Now().Add(connectWithin)
	for {
		conn, err := d.subscribe(ctx)
		if err == nil {
			d.mu.Lock()
			d.conn = conn
			d.mu.Unlock()
			go d.read(ctx, conn)
			return nil
		}
		// A client reconnecting after a gateway restart tries again whatever went wrong (a
		// dial refused while the listen queue is full, a slow upgrade), sooner when told.
		hint := time.Duration(0)
		var refused *refusal
		switch {
		case errors.As(err, &refused):
			hint = refused.retryAfter
		case syncclient.IsRefusal(err):
			hint, _ = syncclient.RetryAfter(err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("device of %s: %w", d.user, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff.Next(hint)):
		}
	}
}

// refusal is an upgrade (429, 503) or a subscription the gateway refused for now.
type refusal struct {
	status     int
	message    string // the subscription's error
	retryAfter time.Duration
}

func (r *refusal) Error() string {
	if r.message != "" {
		return "subscription refused: " + r.message
	}
	return "upgrade refused: " + http.StatusText(r.status)
}

// subscriptionRefusal is the subscription's errors: a refusal with its hint when the first
// has one (extensions.retryAfterMs).
func subscriptionRefusal(errs json.RawMessage) error {
	var list []struct {
		Message    string `json:"message"`
		Extensions struct {
			RetryAfterMs int64 `json:"retryAfterMs"`
		} `json:"extensions"`
	}
	if json.Unmarshal(errs, &list) != nil || len(list) == 0 {
		return fmt.Errorf("the gateway ended the subscription: %.200s", errs)
	}
	return &refusal{message: list[0].Message, retryAfter: time.Duration(list[0].Extensions.RetryAfterMs) * time.Millisecond}
}

// subscribe dials, sends connection_init, waits for connection_ack and subscribes.
func (d *device) subscribe(ctx context.Context) (*websocket.Conn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(d.url, "http") + "/query"
	conn, resp, err := websocket.Dial(dialCtx, wsURL, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			return nil, &refusal{status: resp.StatusCode, retryAfter: time.Duration(s) * time.Second}
		}
		return nil, err
	}
	init, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + d.token})
	if err := writeMessage(dialCtx, conn, wsMessage{Type: "connection_init", Payload: init}); err != nil {
		conn.CloseNow()
		return nil, err
	}
	for acked := false; !acked; {
		m, err := readMessage(dialCtx, conn)
		if err != nil {
			conn.CloseNow()
			return nil, err // a 1013 close is a refusal (syncclient.IsRefusal)
		}
		switch m.Type {
		case "connection_ack":
			acked = true
		case "ping":
			if err := writeMessage(dialCtx, conn, wsMessage{Type: "pong"}); err != nil {
				conn.CloseNow()
				return nil, err
			}
		}
	}
	sub, _ := json.Marshal(map[string]any{"operationName": "FanoutEvents", "query": subscribeQuery})
	if err := writeMessage(dialCtx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
		conn.CloseNow()
		return nil, err
	}
	return conn, nil
}

// read notes the arrival of each of the group's NEW_MESSAGE events and answers pings until
// the connection or its subscription ends; then, unless the bench ended it, the device
// connects again, as a client does.
func (d *device) read(ctx context.Context, conn *websocket.Conn) {
	err := d.follow(ctx, conn)
	_ = conn.CloseNow()
	if ctx.Err() != nil {
		return
	}
	d.mu.Lock()
	d.reconnects++
	d.dropped = err
	d.mu.Unlock()
	// Not sooner than the gateway said, and spread over half that again, as the reference
	// client waits.
	backoff := syncclient.Backoff{Min: 100 * time.Millisecond, Max: 3 * time.Second}
	var refused *refusal
	hint := time.Duration(0)
	if errors.As(err, &refused) {
		hint = refused.retryAfter
	}
	if !sleep(ctx, backoff.Next(hint)) {
		return
	}
	if err := d.connect(ctx); err != nil {
		d.end(ctx, err)
	}
}

// follow reads conn until it or its subscription ends, and returns why.
func (d *device) follow(ctx context.Context, conn *websocket.Conn) error {
	for {
		m, err := readMessage(ctx, conn)
		if err != nil {
			return err
		}
		now := time.Now()
		switch m.Type {
		case "ping":
			if err := writeMessage(ctx, conn, wsMessage{Type: "pong"}); err != nil {
				return err
			}
		case "next":
			var p struct {
				Data struct {
					SyncEvents *struct {
						Type           string `json:"type"`
						ConversationID string `json:"conversationID"`
						Seq            int64  `json:"seq"`
					} `json:"syncEvents"`
				} `json:"data"`
				Errors json.RawMessage `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				return fmt.Errorf("event payload: %w", err)
			}
			if len(p.Errors) > 0 && p.Data.SyncEvents == nil {
				return subscriptionRefusal(p.Errors)
			}
			if ev := p.Data.SyncEvents; ev != nil && ev.Type == "NEW_MESSAGE" && ev.ConversationID == d.conv {
				d.mu.Lock()
				if _, seen := d.arrived[ev.Seq]; !seen {
					d.arrived[ev.Seq] = now
				}
				d.mu.Unlock()
			}
		case "error":
			return subscriptionRefusal(m.Payload)
		case "complete":
			return errors.New("the gateway completed the subscription")
		}
	}
}

// end notes why the device gave up, unless the bench ended it.
func (d *device) end(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	d.mu.Lock()
	if d.ended == nil {
		d.ended = err
	}
	d.mu.Unlock()
}

// closeNow drops the device's connection; the bench is done with it.
func (d *device) closeNow() {
	d.mu.Lock()
	conn := d.conn
	d.mu.Unlock()
	if conn != nil {
		_ = conn.CloseNow()
	}
}

// gone reports whether the device gave up before the bench closed it: nothing more arrives.
func (d *device) gone() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ended != nil
}

// reconnected returns how many times the device connected again, and why it last had to.
func (d *device) reconnected() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reconnects, d.dropped
}

// arrival returns when seq arrived, if it did.
func (d *device) arrival(seq int64) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.arrived[seq]
	return t, ok
}

func writeMessage(ctx context.Context, conn *websocket.Conn, m wsMessage) error {
	b, _ := json.Marshal(m)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}

func readMessage(ctx context.Context, conn *websocket.Conn) (wsMessage, error) {
	_, b, err := conn.Read(ctx)
	if err != nil {
		return wsMessage{}, err
	}
	var m wsMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return wsMessage{}, fmt.Errorf("a message that is not JSON: %.200s", b)
	}
	return m, nil
}
