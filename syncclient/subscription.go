package syncclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// WebSocket close codes the gateway sends.
const (
	closeGoingAway    = websocket.StatusGoingAway // 1001: the instance is shutting down
	closeSlowConsumer = websocket.StatusCode(4008)
	closeUnauthorized = websocket.StatusCode(4403)
)

const subscriptionQuery = `subscription SyncEvents($since: String) { syncEvents(since: $since) { ` + eventFields + ` } }`

// wsMessage is one graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// errCompleted: the gateway ended the subscription.
var errCompleted = errors.New("syncclient: the gateway completed the subscription")

// maxLiveBatch bounds how many events that have already arrived are applied together (their
// bodies fetched in one request).
const maxLiveBatch = 256

// stream follows syncEvents from the replica's token until the connection ends. healthy
// reports that the subscription was established (so the next reconnect starts with the
// shortest wait).
func (c *Client) stream(ctx context.Context) (healthy bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dialCtx, dialCancel := context.WithTimeout(ctx, 10*time.Second)
	conn, resp, err := websocket.Dial(dialCtx, c.wsURL, &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
	})
	dialCancel()
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) {
			// The upgrade itself was refused: keep the hint, so the reconnect honours it.
			return false, upgradeRefusal(resp)
		}
		return false, fmt.Errorf("dial %s: %w", c.wsURL, err)
	}
	conn.SetReadLimit(4 << 20)
	c.mu.Lock()
	c.conn = conn
	since := c.replica.cursors.String()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
		_ = conn.CloseNow()
	}()

	write := func(m wsMessage) error {
		b, _ := json.Marshal(m)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	payload := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	if err := write(wsMessage{Type: "connection_init", Payload: payload(map[string]string{"Authorization": "Bearer " + c.bearer()})}); err != nil {
		return false, err
	}

	// One goroutine reads; it answers pings itself and hands everything else over.
	msgs := make(chan wsMessage, maxLiveBatch)
	readErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			var m wsMessage
			if err := json.Unmarshal(b, &m); err != nil {
				readErr <- fmt.Errorf("syncclient: the gateway sent a message that is not JSON: %.200s", b)
				return
			}
			if m.Type == "ping" {
				if err := write(wsMessage{Type: "pong"}); err != nil {
					readErr <- err
					return
				}
				continue
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	closed := func() error {
		select {
		case err := <-readErr:
			return err
		default:
			return ctx.Err()
		}
	}

	acked := false
	for !acked {
		m, ok := <-msgs
		if !ok {
			return false, closed()
		}
		switch m.Type {
		case "connection_ack":
			acked = true
		case "pong", "ka":
		default:
			return false, fmt.Errorf("syncclient: expected connection_ack, got %q", m.Type)
		}
	}
	vars := map[string]any{}
	if since != "" {
		vars["since"] = since
	}
	if err := write(wsMessage{ID: "1", Type: "subscribe", Payload: payload(map[string]any{
		"operationName": "SyncEvents", "query": subscriptionQuery, "variables": vars})}); err != nil {
		return false, err
	}
	c.logf("subscribed to syncEvents since %s", since)

	for {
		m, ok := <-msgs
		if !ok {
			return true, closed()
		}
		batch, err := eventOf(m)
		if err != nil {
			return true, err
		}
		// Apply what has already arrived along with it, so its bodies come in one request.
	drain:
		for len(batch) < maxLiveBatch {
			select {
			case m, ok := <-msgs:
				if !ok {
					break drain
				}
				evs, err := eventOf(m)
				if err != nil {
					if len(batch) > 0 {
						if aerr := c.applyLive(ctx, batch); aerr != nil {
							return true, aerr
						}
					}
					return true, err
				}
				batch = append(batch, evs...)
			default:
				break drain
			}
		}
		if err := c.applyLive(ctx, batch); err != nil {
			return true, err
		}
	}
}

// eventOf decodes a subscription message: an event, nothing (keepalives), or the end.
func eventOf(m wsMessage) ([]Event, error) {
	switch m.Type {
	case "next", "data":
		var p struct {
			Data struct {
				SyncEvents *Event `json:"syncEvents"`
			} `json:"data"`
			Errors []gqlError `json:"errors"`
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			return nil, fmt.Errorf("syncclient: event payload: %w", err)
		}
		if len(p.Errors) > 0 || p.Data.SyncEvents == nil {
			return nil, subscriptionError(p.Errors)
		}
		return []Event{*p.Data.SyncEvents}, nil
	case "error":
		var errs []gqlError
		_ = json.Unmarshal(m.Payload, &errs)
		return nil, subscriptionError(errs)
	case "complete":
		return nil, errCompleted
	}
	return nil, nil // pong, ka and whatever a newer gateway may add
}

func subscriptionError(errs []gqlError) error {
	e := &Error{Operation: "SyncEvents", Message: "subscription failed"}
	if len(errs) > 0 {
		e.Message = errs[0].Message
		e.Code, _ = errs[0].Extensions["code"].(string)
		e.RetryAfter = retryAfterOf(errs[0].Extensions, nil)
	}
	return e
}

// applyLive applies events as they arrived over the WebSocket. A gap is filled from
// syncDifference (which then also covers what follows it, so the events after it in the batch
// read as duplicates); TOO_LONG sends the client back to the state summary.
func (c *Client) applyLive(ctx context.Context, events []Event) error {
	for _, ev := range events {
		if ev.Type == EventTooLong {
			c.logf("live: TOO_LONG; back to the state summary")
			return errTooLong
		}
		switch c.place(ev) {
		case placeNext:
			c.apply(ev)
			c.logf("live: %s", describeEvent(ev))
		case placeDuplicate:
			c.logf("live: position %d already applied; ignored", ev.Position)
		case placeGap:
			c.logf("live: gap before %s; filling it from syncDifference", ev.Token)
			if err := c.difference(ctx); err != nil {
				return err
			}
			c.logf("live: gap filled, now at %s", c.Token())
		}
	}
	return c.fetchPending(ctx)
}

// describeEnd says why a connection ended, naming the gateway's close codes.
func describeEnd(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case closeSlowConsumer:
			return fmt.Sprintf("closed as a slow consumer (%d: %s)", ce.Code, ce.Reason)
		case closeGoingAway:
			return fmt.Sprintf("the gateway is going away (%d: %s)", ce.Code, ce.Reason)
		case closeTryAgainLater:
			return fmt.Sprintf("refused for now (%d: %s)", ce.Code, ce.Reason)
		}
		return fmt.Sprintf("closed (%d: %s)", ce.Code, ce.Reason)
	}
	if err == nil {
		return "connection ended"
	}
	return err.Error()
}

// upgradeRefusal is the error of a WebSocket upgrade answered 503 or 429, with the hint of
// its GraphQL body or its Retry-After header.
func upgradeRefusal(resp *http.Response) error {
	e := &Error{Operation: "SyncEvents", Message: resp.Status, HTTPStatus: resp.StatusCode}
	var body struct {
		Errors []gqlError `json:"errors"`
	}
	var ext map[string]any
	if resp.Body != nil {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(raw, &body) == nil && len(body.Errors) > 0 {
			e.Message = body.Errors[0].Message
			e.Code, _ = body.Errors[0].Extensions["code"].(string)
			ext = body.Errors[0].Extensions
		}
	}
	e.RetryAfter = retryAfterOf(ext, resp.Header)
	return e
}
