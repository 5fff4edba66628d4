package syncclient

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// closeTokenExpired is the close code the gateway ends a WebSocket connection with when the
// token it was authenticated with reaches its exp (graph.CloseTokenExpired).
const closeTokenExpired = websocket.StatusCode(4401)

// TokenSource gives the client a bearer token that has not expired (Options.TokenSource). It
// is called before the first connection when New was given no token, after the gateway closed
// a connection because its token expired, and when an HTTP request was refused as
// UNAUTHENTICATED; it may hand out one token until shortly before its exp.
type TokenSource func(ctx context.Context) (string, error)

// bearerToken is the token the client presents, and whether it is due for renewal.
type bearerToken struct {
	mu    sync.Mutex
	token string
	stale bool
}

// bearer returns the token to present now.
func (c *Client) bearer() string {
	c.auth.mu.Lock()
	defer c.auth.mu.Unlock()
	return c.auth.token
}

// renewToken gets a fresh token from Options.TokenSource when one is due. Without a source
// it does nothing: the fixed token is presented until the gateway refuses it.
func (c *Client) renewToken(ctx context.Context) error {
	src := c.opts.TokenSource
	c.auth.mu.Lock()
	due := c.auth.stale || c.auth.token == ""
	c.auth.mu.Unlock()
	if src == nil || !due {
		return nil
	}
	tok, err := src(ctx)
	if err == nil && tok == "" {
		err = errors.New("it gave an empty token")
	}
	if err != nil {
		return fmt.Errorf("syncclient: token source: %w", err)
	}
	c.auth.mu.Lock()
	c.auth.token, c.auth.stale = tok, false
	c.auth.mu.Unlock()
	c.logf("got a fresh token from the token source")
	return nil
}

// tokenExpired reports whether err is the gateway closing the connection because its token
// expired, and marks the token for renewal if so.
func (c *Client) tokenExpired(err error) bool {
	if websocket.CloseStatus(err) != closeTokenExpired {
		return false
	}
	c.auth.mu.Lock()
	c.auth.stale = true
	c.auth.mu.Unlock()
	return true
}

// renewAfterRefusal renews the token when err is an HTTP request refused as UNAUTHENTICATED
// and there is a TokenSource (the token may have expired since it was fetched), and reports
// whether the request should be sent again with the new one.
func (c *Client) renewAfterRefusal(ctx context.Context, err error) bool {
	var e *Error
	if c.opts.TokenSource == nil || !errors.As(err, &e) || e.Code != "UNAUTHENTICATED" {
		return false
	}
	c.auth.mu.Lock()
	c.auth.stale = true
	c.auth.mu.Unlock()
	return c.renewToken(ctx) == nil
}
