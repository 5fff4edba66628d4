package im

import (
	"strconv"
	"strings"
)

// EventType names a change that a user's devices must learn.
type EventType string

const (
	// EventNewMessage: a message was stored at Seq in a conversation of the user.
	EventNewMessage EventType = "NEW_MESSAGE"
	// EventRead: the user's read seq moved (on any device).
	EventRead EventType = "READ"
	// EventRevoke: the message at Seq was revoked.
	EventRevoke EventType = "REVOKE"
	// EventDelete: the messages at Seqs were deleted, for everyone or for this user only.
	EventDelete EventType = "DELETE"
	// EventClear: seqs below MinSeq are gone for the user (history cleared or expired).
	EventClear EventType = "CLEAR"
	// EventTooLong is never stored: a subscription sends it when the client's token cannot be
	// served, telling it to start again from the state summary.
	EventTooLong EventType = "TOO_LONG"
)

// Counted reports whether events of this type carry the conversation's counters after the
// change (MaxSeq, MinSeq, ReadSeq, Unread).
func (t EventType) Counted() bool {
	return t == EventNewMessage || t == EventRead || t == EventClear
}

// Event is one entry of a user's event log. Position is dense within one log epoch (1, 2, 3,
// …), so a client that sees Position jump knows it missed events.
type Event struct {
	Epoch          string    `json:"e"`
	Position       int64     `json:"p"`
	Type           EventType `json:"k"`
	Time           int64     `json:"t"` // ms
	ConversationID string    `json:"c,omitempty"`
	Seq            int64     `json:"s,omitempty"`
	SendID         string    `json:"u,omitempty"`
	Seqs           []int64   `json:"ss,omitempty"`
	ForEveryone    bool      `json:"fe,omitempty"`
	// The user's counters in the conversation after the event; set when Type.Counted().
	MaxSeq  int64 `json:"x,omitempty"`
	MinSeq  int64 `json:"m,omitempty"` // lowest seq the user may read
	ReadSeq int64 `json:"r,omitempty"`
	Unread  int64 `json:"n,omitempty"`
}

// Token returns the sync token that names the log position just after this event.
func (e Event) Token() SyncToken { return SyncToken{Epoch: e.Epoch, Position: e.Position} }

// SyncToken names a position in one user's event log. Epoch changes when the log is created
// anew (its Redis keys were lost), which makes every older token unusable, and detectably so.
type SyncToken struct {
	Epoch    string
	Position int64
}

func (t SyncToken) String() string { return t.Epoch + "." + strconv.FormatInt(t.Position, 10) }

// ParseSyncToken parses a token made by SyncToken.String.
func ParseSyncToken(s string) (SyncToken, error) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || len(s) > 64 {
		return SyncToken{}, Errorf(EINVALID, "malformed sync token %q", truncate(s, 70))
	}
	pos, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || pos < 0 {
		return SyncToken{}, Errorf(EINVALID, "malformed sync token %q", truncate(s, 70))
	}
	return SyncToken{Epoch: s[:i], Position: pos}, nil
}
