package syncclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Error is an error the gateway answered a GraphQL request with.
type Error struct {
	Operation string
	Message   string
	Code      string // extensions.code
	// Path is the error's path; its first element names the field (or alias) that failed.
	Path []any
	// MinSeq is extensions.minSeq of a HISTORY_UNAVAILABLE error: where readable history
	// starts.
	MinSeq int64
	// HTTPStatus is the answer's status (0 over WebSocket).
	HTTPStatus int
	// RetryAfter is the gateway's retry hint: extensions.retryAfterMs, else the Retry-After
	// header (see IsRefusal).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Operation, e.Message, e.Code)
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// do sends one GraphQL request over HTTP, counted under its operation name, and decodes its
// data into out. GraphQL errors come back as *Error (the first one; all of them in errs).
// With a TokenSource, a request refused as UNAUTHENTICATED is sent once more with a fresh token.
func (c *Client) do(ctx context.Context, op, query string, vars map[string]any, out any) (errs []*Error, err error) {
	errs, err = c.doOnce(ctx, op, query, vars, out)
	if c.renewAfterRefusal(ctx, err) {
		errs, err = c.doOnce(ctx, op, query, vars, out)
	}
	return errs, err
}

func (c *Client) doOnce(ctx context.Context, op, query string, vars map[string]any, out any) (errs []*Error, err error) {
	c.mu.Lock()
	c.requests[op]++
	c.mu.Unlock()
	body, err := json.Marshal(map[string]any{"operationName": op, "query": query, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	req.Header.Set("Authorization", "Bearer "+c.bearer())
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
			// A refusal from something in front of the gateway (a proxy) still says when to
			// come back.
			return nil, &Error{Operation: op, Message: resp.Status, HTTPStatus: resp.StatusCode,
				RetryAfter: retryAfterOf(nil, resp.Header)}
		}
		return nil, fmt.Errorf("%s: HTTP %d with a body that is not GraphQL: %.200s", op, resp.StatusCode, raw)
	}
	for _, e := range r.Errors {
		ge := &Error{Operation: op, Message: e.Message, Path: e.Path, HTTPStatus: resp.StatusCode,
			RetryAfter: retryAfterOf(e.Extensions, resp.Header)}
		ge.Code, _ = e.Extensions["code"].(string)
		if m, ok := e.Extensions["minSeq"].(float64); ok {
			ge.MinSeq = int64(m)
		}
		errs = append(errs, ge)
	}
	if len(errs) > 0 {
		return errs, errs[0]
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return nil, fmt.Errorf("%s: decode %.200s: %w", op, r.Data, err)
	}
	return nil, nil
}

// messageFields selects what the replica keeps of a message.
const messageFields = `seq status sendID content`

type wireMessage struct {
	Seq     int64   `json:"seq"`
	Status  Status  `json:"status"`
	SendID  *string `json:"sendID"`
	Content *string `json:"content"`
}

func (m wireMessage) message() Message {
	out := Message{Seq: m.Seq, Status: m.Status}
	if m.SendID != nil {
		out.SendID = *m.SendID
	}
	if m.Content != nil && m.Status == StatusOK {
		out.Content = *m.Content
	}
	return out
}

const syncStateQuery = `query SyncState($first: Int, $after: String) {
  viewer { userID }
  syncState(first: $first, after: $after) {
    token totalUnread hasMore endCursor
    conversations { id maxSeq minSeq readSeq unreadCount lastMessage { ` + messageFields + ` } }
  }
}`

type statePage struct {
	Viewer struct {
		UserID string `json:"userID"`
	} `json:"viewer"`
	SyncState struct {
		Token         string  `json:"token"`
		TotalUnread   int64   `json:"totalUnread"`
		HasMore       bool    `json:"hasMore"`
		EndCursor     *string `json:"endCursor"`
		Conversations []struct {
			ID string `json:"id"`
			Counters
			LastMessage *wireMessage `json:"lastMessage"`
		} `json:"conversations"`
	} `json:"syncState"`
}

// bootstrap rebuilds the replica from the state summary: every page, keeping the first page's
// token (the events after it cover whatever changed while the later pages were read). The
// conversations the replica had are dropped: after missed events nothing they held can be
// trusted. Each conversation starts with its newest message; a FullHistory replica fetches
// the rest.
func (c *Client) bootstrap(ctx context.Context) error {
	var (
		token, userID string
		total         int64
		after         *string
	)
	convs := map[string]*Conversation{}
	for page := 1; ; page++ {
		vars := map[string]any{"first": c.opts.PageSize}
		if after != nil {
			vars["after"] = *after
		}
		var p statePage
		if _, err := c.do(ctx, "SyncState", syncStateQuery, vars, &p); err != nil {
			return err
		}
		s := p.SyncState
		if page == 1 {
			token, total, userID = s.Token, s.TotalUnread, p.Viewer.UserID
		}
		for _, sc := range s.Conversations {
			conv := &Conversation{ID: sc.ID, Counters: sc.Counters, Messages: map[int64]Message{}}
			if m := sc.LastMessage; m != nil && m.Seq >= conv.MinSeq {
				conv.Messages[m.Seq] = m.message()
			}
			convs[sc.ID] = conv
		}
		c.logf("state summary page %d: %d conversations (more: %v)", page, len(s.Conversations), s.HasMore)
		if !s.HasMore || s.EndCursor == nil {
			break
		}
		after = s.EndCursor
	}
	c.mu.Lock()
	c.replica = replicaState{userID: userID, cursors: parseToken(token), convs: convs}
	c.pending = map[string]map[int64]bool{}
	for _, conv := range convs {
		c.fillHoles(conv)
	}
	c.bootstrapNeeded = false
	c.mu.Unlock()
	c.logf("bootstrapped at %s: %d conversations, %d unread", token, len(convs), total)
	return nil
}

const differenceQuery = `query SyncDifference($since: String!, $limit: Int) {
  syncDifference(since: $since, limit: $limit) { token hasMore tooLong events { ` + eventFields + ` } }
}`

type differencePage struct {
	Token   string  `json:"token"`
	HasMore bool    `json:"hasMore"`
	TooLong bool    `json:"tooLong"`
	Events  []Event `json:"events"`
}

func (c *Client) fetchDifference(ctx context.Context, since string) (differencePage, error) {
	var out struct {
		SyncDifference differencePage `json:"syncDifference"`
	}
	_, err := c.do(ctx, "SyncDifference", differenceQuery, map[string]any{"since": since, "limit": c.opts.DifferenceLimit}, &out)
	return out.SyncDifference, err
}

// Limits of one messages request: the gateway's seqs per request, and few enough aliases to
// stay within its alias and complexity limits.
const (
	maxSeqsPerRequest    = 1000
	maxAliasesPerRequest = 20
)

type fetchBatch struct {
	convs []string
	seqs  [][]int64
	n     int
}

// fetchPending fetches the bodies the replica is waiting for, several conversations to a
// request. A conversation whose history starts later than the replica thought (cleared while
// the fetch was on its way) loses the seqs below it and is asked again.
func (c *Client) fetchPending(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		batches := c.pendingBatches()
		if len(batches) == 0 {
			return nil
		}
		retry := false
		for _, b := range batches {
			again, err := c.fetchBatch(ctx, b)
			if err != nil {
				return err
			}
			retry = retry || again
		}
		if !retry || attempt >= 3 {
			return nil
		}
	}
}

// pendingBatches groups the pending seqs into requests; seqs outside [minSeq, maxSeq] are
// dropped (below: gone for the user; above: not stored yet, their event will ask again).
func (c *Client) pendingBatches() []fetchBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []fetchBatch
	cur := fetchBatch{}
	flush := func() {
		if len(cur.convs) > 0 {
			out = append(out, cur)
			cur = fetchBatch{}
		}
	}
	for _, id := range ids {
		conv := c.replica.convs[id]
		var seqs []int64
		for s := range c.pending[id] {
			if conv != nil && s >= conv.MinSeq && s <= conv.MaxSeq {
				seqs = append(seqs, s)
			}
		}
		if len(seqs) == 0 {
			delete(c.pending, id)
			continue
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		for len(seqs) > 0 {
			room := maxSeqsPerRequest - cur.n
			if room == 0 || len(cur.convs) == maxAliasesPerRequest {
				flush()
				room = maxSeqsPerRequest
			}
			take := min(room, len(seqs))
			cur.convs = append(cur.convs, id)
			cur.seqs = append(cur.seqs, seqs[:take])
			cur.n += take
			seqs = seqs[take:]
		}
	}
	flush()
	return out
}

// fetchBatch runs one messages request and applies what it answers. again reports that some
// conversation's seqs must be asked again (its history starts later than asked).
func (c *Client) fetchBatch(ctx context.Context, b fetchBatch) (again bool, err error) {
	var q strings.Builder
	q.WriteString("query Messages(")
	vars := map[string]any{}
	for i := range b.convs {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "$c%d: ID!, $s%d: [Int64!]!", i, i)
		vars[fmt.Sprintf("c%d", i)] = b.convs[i]
		vars[fmt.Sprintf("s%d", i)] = b.seqs[i]
	}
	q.WriteString(") {")
	for i := range b.convs {
		fmt.Fprintf(&q, " m%d: messages(conversationID: $c%d, seqs: $s%d) { %s }", i, i, i, messageFields)
	}
	q.WriteString(" }")
	out := map[string][]wireMessage{}
	errs, err := c.do(ctx, "Messages", q.String(), vars, &out)
	if err != nil && errs == nil {
		return false, err
	}
	if len(errs) > 0 {
		// One failing field fails the whole answer (messages is non-null). Learn from each
		// error what to stop asking for, and ask again.
		for _, e := range errs {
			i := aliasIndex(e.Path)
			if i < 0 {
				return false, e
			}
			conv := b.convs[i]
			switch e.Code {
			case "HISTORY_UNAVAILABLE":
				c.forgetBelow(conv, e.MinSeq)
			case "FORBIDDEN", "NOT_FOUND":
				c.forgetPending(conv)
			default:
				return false, e
			}
		}
		return true, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range b.convs {
		conv := c.replica.convs[id]
		for _, s := range b.seqs[i] {
			delete(c.pending[id], s)
		}
		if len(c.pending[id]) == 0 {
			delete(c.pending, id)
		}
		if conv == nil {
			continue
		}
		got := out[fmt.Sprintf("m%d", i)]
		for _, m := range got {
			// The answer is newer than every event applied so far: it wins. A seq that fell
			// below the min seq meanwhile stays dropped.
			if m.Seq >= conv.MinSeq {
				conv.Messages[m.Seq] = m.message()
			}
		}
	}
	if n := b.n; n > 0 {
		c.logf("fetched %d messages in %d conversations", n, len(b.convs))
	}
	return false, nil
}

// aliasIndex returns i for an error path starting with alias "m<i>", else -1.
func aliasIndex(path []any) int {
	if len(path) == 0 {
		return -1
	}
	s, ok := path[0].(string)
	if !ok || !strings.HasPrefix(s, "m") {
		return -1
	}
	var i int
	if _, err := fmt.Sscanf(s, "m%d", &i); err != nil {
		return -1
	}
	return i
}

// forgetBelow drops what the replica holds or waits for below minSeq in a conversation: the
// gateway said that history is gone for the user (the CLEAR event that says so may still be
// on its way).
func (c *Client) forgetBelow(convID string, minSeq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.pending[convID] {
		if s < minSeq {
			delete(c.pending[convID], s)
		}
	}
	if conv := c.replica.convs[convID]; conv != nil {
		for s := range conv.Messages {
			if s < minSeq {
				delete(conv.Messages, s)
			}
		}
	}
}

func (c *Client) forgetPending(convID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, convID)
}
