// Package syncclient is msggate's reference sync client: it keeps one user's local replica of
// their conversations (counters, and messages by seq with their status) in step with the
// gateway, the way a phone or a browser tab would.
//
// It starts from the state summary (syncState, keeping the token of its first page), catches
// up with syncDifference, then follows syncEvents over WebSocket (graphql-transport-ws). Events
// are applied by position, Telegram-style: the next one must be the last one's plus one; an
// older one is a duplicate and is ignored; a newer one means events were missed, and the gap is
// filled from syncDifference before going on — never skipped. A token the gateway cannot serve
// any more (its log moved on, or Redis lost it) sends the client back to the state summary.
// Message bodies are fetched by seq with messages(conversationID, seqs), batched, and seqs a
// conversation skipped are fetched too, so the replica has no holes it does not know of.
//
// Use Run to stay live (it reconnects from the last token, with jittered backoff, honouring
// the gateway's retry hints, within a retry budget) or Sync for a single catch-up over HTTP.
// Replica returns a snapshot; Requests counts the HTTP GraphQL requests made, by operation
// name; Outcomes counts Run's refused and failed attempts.
package syncclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Options configures a Client. The zero value is usable.
type Options struct {
	// HTTPClient sends the GraphQL requests and dials the WebSocket. Default: a client of its
	// own with a 30 s timeout for each HTTP request.
	HTTPClient *http.Client
	// PageSize is how many conversations one syncState page asks for. Default 100 (the
	// gateway's maximum).
	PageSize int
	// DifferenceLimit is how many events one syncDifference asks for. Default 1000 (the
	// gateway's maximum), so a catch-up costs few requests.
	DifferenceLimit int
	// FullHistory keeps every message from each conversation's minSeq to its maxSeq in the
	// replica, fetching what is missing. Without it the replica holds the newest message of
	// each conversation from the state summary and what arrived since, and a re-bootstrap
	// fetches no history: a device that shows a conversation list, and loads history when a
	// conversation is opened.
	FullHistory bool
	// MaxGapFill bounds how many skipped seqs below a new message are fetched with it (the
	// newest ones). Default 1000 (one request).
	MaxGapFill int
	// ReconnectMin and ReconnectMax bound the wait before reconnecting after the WebSocket
	// closed or a catch-up failed: jittered exponential backoff (Backoff), growing while the
	// attempts fail and starting again from ReconnectMin after a connection that was
	// established. A refusal's hint (503, 429, 1013, retryAfterMs) is the least wait. After
	// TOO_LONG the client starts again from the state summary after a random wait up to
	// ReconnectMax. Defaults 100 ms and 5 s.
	ReconnectMin, ReconnectMax time.Duration
	// RetryBudget bounds the reconnects that follow a failed one (see RetryBudget): a
	// reconnect after an established connection deposits, one after a failed attempt spends,
	// and with the budget empty the client waits for it. Default: a budget of the client's
	// own with the default numbers. Clients of one process may share one.
	RetryBudget *RetryBudget
	// Logf, when set, receives a line for each thing the client does (bootstrap, pages,
	// events applied, gaps filled, reconnects).
	Logf func(format string, args ...any)
	// TokenSource, when set, gives fresh bearer tokens (see TokenSource): when the gateway
	// closes the connection because its token expired (4401), Run reconnects at once with a
	// new one, without counting a failure. Without it the token given to New is used until
	// the gateway refuses it, and Run then returns the refusal.
	TokenSource TokenSource
	// OnApply, when set, is called after each event is applied, with the counters before and
	// after: tests check CheckInvariants on it. It runs on the client's goroutine and must not
	// call the client back.
	OnApply func(Applied)
}

// Client keeps one user's replica. Run and Sync must not be called concurrently (one returns
// ErrBusy while the other runs); Replica, Requests and DropConnection may be called at any
// time.
type Client struct {
	endpoint string
	wsURL    string
	auth     bearerToken
	opts     Options

	busy sync.Mutex // held by Run or Sync

	mu      sync.Mutex
	replica replicaState
	// pending holds, per conversation, the seqs whose bodies must be (re)fetched.
	pending map[string]map[int64]bool
	// bootstrapNeeded: the token cannot be served; start from the state summary.
	bootstrapNeeded bool
	requests        map[string]int
	// refused and failed count Run's attempts that ended in a refusal, or failed, by code.
	refused int
	failed  map[string]int
	conn    *websocket.Conn
}

// ErrBusy is returned by Run or Sync while the other runs.
var ErrBusy = errors.New("syncclient: Run or Sync is already running")

// New returns a client for the gateway's GraphQL endpoint (http://host:port/query; a URL
// without a path gets /query) acting with the bearer token jwt (empty when opts.TokenSource gives one).
func New(endpoint, jwt string, opts Options) (*Client, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.DifferenceLimit <= 0 {
		opts.DifferenceLimit = 1000
	}
	if opts.MaxGapFill <= 0 {
		opts.MaxGapFill = 1000
	}
	if opts.ReconnectMin <= 0 {
		opts.ReconnectMin = 100 * time.Millisecond
	}
	if opts.ReconnectMax < opts.ReconnectMin {
		opts.ReconnectMax = max(5*time.Second, opts.ReconnectMin)
	}
	if opts.RetryBudget == nil {
		opts.RetryBudget = NewRetryBudget(0, 0, 0)
	}
	endpoint = strings.TrimRight(endpoint, "/")
	var wsURL string
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		wsURL = "ws://" + strings.TrimPrefix(endpoint, "http://")
	case strings.HasPrefix(endpoint, "https://"):
		wsURL = "wss://" + strings.TrimPrefix(endpoint, "https://")
	default:
		return nil, fmt.Errorf("syncclient: endpoint %q is not an http:// or https:// URL", endpoint)
	}
	if rest := endpoint[strings.Index(endpoint, "//")+2:]; !strings.Contains(rest, "/") {
		endpoint += "/query"
		wsURL += "/query"
	}
	return &Client{
		endpoint: endpoint, wsURL: wsURL, auth: bearerToken{token: jwt}, opts: opts,
		replica:  replicaState{convs: map[string]*Conversation{}},
		pending:  map[string]map[int64]bool{},
		requests: map[string]int{},
		failed:   map[string]int{},
	}, nil
}

func (c *Client) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

// Sync brings the replica up to date over HTTP only: the state summary when there is no
// usable token yet, then the events after the token until there are no more, then the message
// bodies still missing.
func (c *Client) Sync(ctx context.Context) error {
	if !c.busy.TryLock() {
		return ErrBusy
	}
	defer c.busy.Unlock()
	return c.catchUp(ctx)
}

// catchUp is Sync without the busy lock.
func (c *Client) catchUp(ctx context.Context) error {
	// Each round either finishes or met a token that could not be served; a few in a row mean
	// the log keeps being lost under us (a Redis restarting in a loop): give up for now.
	for round := 0; round < 5; round++ {
		c.mu.Lock()
		boot := c.bootstrapNeeded || c.replica.cursors.user.epoch == ""
		c.mu.Unlock()
		if boot {
			if err := c.bootstrap(ctx); err != nil {
				return err
			}
		}
		err := c.difference(ctx)
		if errors.Is(err, errTooLong) {
			c.mu.Lock()
			c.bootstrapNeeded = true
			c.mu.Unlock()
			continue
		}
		if err != nil {
			return err
		}
		return c.fetchPending(ctx)
	}
	return errors.New("syncclient: the event log was lost again on every catch-up")
}

// errTooLong: the token cannot be served; the state summary must be read again.
var errTooLong = errors.New("syncclient: the sync token can no longer be served")

// difference applies the events after the replica's token until the log has no more.
func (c *Client) difference(ctx context.Context) error {
	for {
		c.mu.Lock()
		since := c.replica.cursors.String()
		c.mu.Unlock()
		d, err := c.fetchDifference(ctx, since)
		if err != nil {
			return err
		}
		if d.TooLong {
			c.logf("difference since %s: too long; back to the state summary", since)
			return errTooLong
		}
		if len(d.Events) > 0 {
			c.logf("difference since %s: %d events (more: %v)", since, len(d.Events), d.HasMore)
		}
		for _, ev := range d.Events {
			switch c.place(ev) {
			case placeNext:
				c.apply(ev)
			case placeDuplicate:
			case placeGap:
				// A difference is dense by contract; a hole in it is the gateway's fault, and
				// applying past it would lose events silently.
				return fmt.Errorf("syncclient: syncDifference since %s skipped to %s in stream %q",
					since, ev.Token, ev.Stream)
			}
			if ev.Type == EventTooLong {
				return errTooLong
			}
		}
		// Every event of the page is applied: the replica stands where the page ends, in
		// every stream (a stream with no events keeps its cursor).
		c.mu.Lock()
		c.replica.cursors = parseToken(d.Token)
		c.mu.Unlock()
		if !d.HasMore {
			return nil
		}
	}
}

// Run keeps the replica live until ctx ends: it catches up over HTTP when it has no usable
// token, then follows syncEvents over WebSocket from the last token. When the connection closes
// (slow consumer, the gateway going away, the network) or a catch-up fails, it tries again
// after a backoff and resumes from the last token: a jittered, growing wait (Backoff between
// ReconnectMin and ReconnectMax), at least the gateway's retry hint when it refused, and
// within the RetryBudget, so that a gateway killed or shedding load is not met by its devices
// all at once and again and again. It returns nil when ctx ends, and an error only for what
// retrying cannot fix (the token was refused).
func (c *Client) Run(ctx context.Context) error {
	if !c.busy.TryLock() {
		return ErrBusy
	}
	defer c.busy.Unlock()
	backoff := Backoff{Min: c.opts.ReconnectMin, Max: c.opts.ReconnectMax}
	budget := c.opts.RetryBudget
	retrying := false // the last attempt failed: the next one is a retry
	for {
		if retrying {
			if !c.awaitBudget(ctx, budget) {
				return nil
			}
		} else {
			budget.Deposit()
		}
		c.mu.Lock()
		needCatchUp := c.bootstrapNeeded || c.replica.cursors.user.epoch == ""
		c.mu.Unlock()
		err := c.renewToken(ctx)
		if err == nil && needCatchUp {
			err = c.catchUp(ctx)
		} else if err == nil {
			err = c.fetchPending(ctx)
		}
		healthy := false
		if err == nil {
			healthy, err = c.stream(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.tokenExpired(err) && c.opts.TokenSource != nil {
			// Not a failure: the token ran out. Reconnect at once, with a fresh one.
			c.logf("token expired (%s); reconnecting with a fresh token from %s", describeEnd(err), c.Token())
			backoff.Reset()
			retrying = false
			continue
		}
		var pause time.Duration
		if errors.Is(err, errTooLong) {
			c.mu.Lock()
			c.bootstrapNeeded = true
			c.mu.Unlock()
			// Not a failure, but when Redis lost the logs every device hears it at the same
			// moment: starting again after a random wait up to ReconnectMax spreads their
			// state reads instead of sending them all at once to a store whose caches are cold.
			pause = rand.N(c.opts.ReconnectMax + 1)
			retrying = false
		} else {
			var gqlErr *Error
			if websocket.CloseStatus(err) == closeUnauthorized || (errors.As(err, &gqlErr) && gqlErr.Code == "UNAUTHENTICATED") {
				return err
			}
			refused := IsRefusal(err)
			c.count(err, refused)
			// A connection that was established ended (the gateway went away, the network
			// dropped it): the next attempt is a new one, from the shortest wait. A
			// subscription refused at once is not an established connection.
			if healthy && !refused {
				backoff.Reset()
				retrying = false
			} else {
				retrying = true
			}
			hint, _ := RetryAfter(err)
			pause = backoff.Next(hint)
			c.logf("disconnected: %s; reconnecting in %v from %s", describeEnd(err), pause.Round(time.Millisecond), c.Token())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
}

// awaitBudget takes a token for a retry from budget, waiting while it is empty (the gateway
// has refused or failed more than a fifth of what this client asked); false when ctx ended.
func (c *Client) awaitBudget(ctx context.Context, budget *RetryBudget) bool {
	for {
		ok, wait := budget.TryRetry()
		if ok {
			return true
		}
		c.logf("retry budget spent; waiting %v", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// count notes one attempt of Run that ended in err: a refusal, or a failure by its code.
func (c *Client) count(err error, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if refused {
		c.refused++
		return
	}
	c.failed[ErrorCode(err)]++
}

// ErrorCode names what err is, for counting: the GraphQL error's extensions.code, HTTP_<status>
// for an answer without one, WS_<code> for a WebSocket closed with a code, CLOSED for a
// connection that ended without one (the gateway went away), TRANSPORT otherwise.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Code != "":
			return e.Code
		case e.HTTPStatus != 0:
			return fmt.Sprintf("HTTP_%d", e.HTTPStatus)
		}
		return "GRAPHQL"
	}
	if code := websocket.CloseStatus(err); code != -1 {
		return fmt.Sprintf("WS_%d", code)
	}
	if err == nil || errors.Is(err, errCompleted) {
		return "CLOSED"
	}
	return "TRANSPORT"
}

// Outcomes returns how many of Run's attempts ended in a refusal (IsRefusal: the gateway
// asked to come back later), and how many failed, by ErrorCode. A connection that ended after
// it was established counts as a failure of its code too (CLOSED, WS_1001, ...).
func (c *Client) Outcomes() (refused int, failed map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	failed = make(map[string]int, len(c.failed))
	for k, v := range c.failed {
		failed[k] = v
	}
	return c.refused, failed
}

// DropConnection closes the current WebSocket at once, as a lost network would; Run then
// reconnects from its last token. It does nothing when no WebSocket is open.
func (c *Client) DropConnection() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		_ = conn.CloseNow()
	}
}

// Token returns the sync token the replica is valid at ("" before the first sync).
func (c *Client) Token() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replica.cursors.String()
}

// Requests returns how many HTTP GraphQL requests the client has made, by operation name
// (SyncState, SyncDifference, Messages). Failed requests count too.
func (c *Client) Requests() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.requests))
	for k, v := range c.requests {
		out[k] = v
	}
	return out
}

// Pending returns how many seqs' bodies the replica is still waiting for.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.pending {
		n += len(p)
	}
	return n
}
