// Package search holds the small interface every message-search engine
// implements and the types that cross it. It imports nothing but the standard
// library so that each engine (the embedded Bleve index, PostgreSQL, or an
// Elasticsearch/OpenSearch engine later) stays the only importer of its own
// driver, and the rules of what a viewer may read stay above it: the caller
// computes the viewer's Scopes and folds retention into SentAfter, and the
// engine only filters by them.
package search

import (
	"context"
	"errors"
)

// Key names one message: the conversation it is in and its seq there.
type Key struct {
	ConversationID string
	Seq            int64
}

// Doc is one message as an engine indexes it.
type Doc struct {
	Key
	SenderID    string
	ContentType int32
	// SendTime is in Unix milliseconds; results are ordered by it.
	SendTime int64
	// Text is the searchable text (plain text of the message content).
	Text string
	// HiddenFor lists the users who deleted the message for themselves.
	HiddenFor []string
}

// Change is one stored change an engine applies. Exactly one field is set.
// Applying a change twice has the same effect as applying it once, so a
// relay that crashed after indexing but before recording its progress can
// simply replay.
type Change struct {
	// Put indexes a message, replacing any earlier version of it.
	Put *Doc
	// Remove drops a message for everyone (revoke, delete for everyone,
	// clear, retention).
	Remove *Key
	// Hide hides a message for one user (deleted for that user only).
	Hide *Hide
}

// Hide hides the message Key for UserID only.
type Hide struct {
	Key
	UserID string
}

// Scope is one conversation the viewer may read now, from MinSeq on.
type Scope struct {
	ConversationID string
	// MinSeq is the first seq the viewer may read; 0 means all.
	MinSeq int64
}

// Request is one search. Everything outside Scopes, below a scope's MinSeq,
// hidden for Viewer or outside the filters is neither returned nor counted.
type Request struct {
	// Viewer is the user searching; messages hidden for them never match.
	Viewer string
	// Text is the user's query: words, or a CJK substring of two or more
	// characters.
	Text string
	// Scopes are the conversations the viewer may read now. An empty list
	// matches nothing.
	Scopes []Scope
	// SenderID, when set, keeps only messages from that sender.
	SenderID string
	// ContentTypes, when set, keeps only messages of these types.
	ContentTypes []int32
	// SentAfter and SentBefore bound SendTime (ms, exclusive); 0 means
	// unbounded. Retention folds into SentAfter.
	SentAfter, SentBefore int64
	// First is how many hits to return; the caller bounds it.
	First int
	// After continues from the last hit of the previous page.
	After *Cursor
}

// Cursor is a position in the result order: SendTime descending, then
// ConversationID ascending, then Seq descending. A page continues strictly
// after it, so paging never repeats or skips a hit and has no cap.
type Cursor struct {
	SendTime int64
	Key
}

// Hit is one matching message.
type Hit struct {
	Key
	SendTime int64
	// Highlight is a fragment of the text with the matches marked, or ""
	// when the engine has none.
	Highlight string
}

// CountLimit is the count up to which Result.Count is exact.
const CountLimit = 10000

// Result is one page of hits.
type Result struct {
	Hits []Hit
	// Count is the number of matches. It is exact up to CountLimit (or an
	// engine's configured lower limit); above it, CountIsExact is false and
	// Count is at least that limit.
	Count        int
	CountIsExact bool
	// HasMore says a next page exists after the last hit.
	HasMore bool
}

// Engine is a message-search engine.
type Engine interface {
	// Apply applies changes in order; it is idempotent.
	Apply(ctx context.Context, changes []Change) error
	// Search answers one request.
	Search(ctx context.Context, req Request) (Result, error)
	// Close releases the engine.
	Close() error
}

// ErrUnavailable is returned (wrapped) when the index cannot answer or
// accept changes now; the caller reports it as UNAVAILABLE and retries
// changes later.
var ErrUnavailable = errors.New("search: index unavailable")

// CursorOf is the cursor just after h.
func CursorOf(h Hit) Cursor { return Cursor{SendTime: h.SendTime, Key: h.Key} }

// Before reports whether a sorts before b in the result order.
func Before(a, b Cursor) bool {
	if a.SendTime != b.SendTime {
		return a.SendTime > b.SendTime
	}
	if a.ConversationID != b.ConversationID {
		return a.ConversationID < b.ConversationID
	}
	return a.Seq > b.Seq
}
