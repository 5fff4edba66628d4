package im

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
	// EventJoin: the user is in a group conversation their token did not follow (they joined,
	// or the token predates its stream): it carries the conversation's counters and the
	// stream's cursor to follow it from. Never stored: the gateway tells it from the token.
	EventJoin EventType = "JOIN"
	// EventLeave: the user is no longer in a group conversation their token followed; its
	// stream ends there. Never stored.
	EventLeave EventType = "LEAVE"
	// EventTooLong is never stored: a subscription sends it when the client's token cannot be
	// served, telling it to start again from the state summary.
	EventTooLong EventType = "TOO_LONG"
)

// Counted reports whether events of this type carry the conversation's counters after the
// change (MaxSeq, MinSeq, ReadSeq, Unread).
func (t EventType) Counted() bool {
	return t == EventNewMessage || t == EventRead || t == EventClear || t == EventJoin
}

// Event is one entry of an event stream: a user's own log, or a group conversation's log,
// which every member reads (Stream). Position is dense within one stream's epoch (1, 2, 3, …),
// so a client that sees Position jump knows it missed events of that stream.
type Event struct {
	// Stream is the group conversation whose log holds the event, "" for the user's own log.
	// It is known from where the event was read, so it is not stored.
	Stream         string    `json:"-"`
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

// Cursor returns the position just after this event in its stream.
func (e Event) Cursor() Cursor { return Cursor{Epoch: e.Epoch, Position: e.Position} }
