package syncclient

import "fmt"

// Event types, as the gateway names them.
const (
	EventNewMessage = "NEW_MESSAGE"
	EventRead       = "READ"
	EventRevoke     = "REVOKE"
	EventDelete     = "DELETE"
	EventClear      = "CLEAR"
	EventJoin       = "JOIN"
	EventLeave      = "LEAVE"
	EventTooLong    = "TOO_LONG"
)

// Event is one SyncEvent. Fields its type does not use are zero.
type Event struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Position int64  `json:"position"`
	// Stream is the group conversation whose stream holds the event, "" for the user's own
	// log; Position is dense within it.
	Stream         string  `json:"stream"`
	Time           int64   `json:"time"`
	ConversationID string  `json:"conversationID"`
	Seq            int64   `json:"seq"`
	SendID         string  `json:"sendID"`
	Seqs           []int64 `json:"seqs"`
	ForEveryone    bool    `json:"forEveryone"`
	// The conversation's counters for the user after the change (NEW_MESSAGE, READ, CLEAR).
	MaxSeq      int64 `json:"maxSeq"`
	MinSeq      int64 `json:"minSeq"`
	ReadSeq     int64 `json:"readSeq"`
	UnreadCount int64 `json:"unreadCount"`
}

// eventFields selects every field of a SyncEvent.
const eventFields = `type token position stream time conversationID seq sendID seqs forEveryone maxSeq minSeq readSeq unreadCount`

func (e Event) counted() bool {
	return e.Type == EventNewMessage || e.Type == EventRead || e.Type == EventClear || e.Type == EventJoin
}

// describeEvent is a one-line account of an event, for progress output.
func describeEvent(e Event) string {
	head := fmt.Sprintf("#%d %s %s", e.Position, e.Type, e.ConversationID)
	if e.Stream != "" {
		head = fmt.Sprintf("%s#%d %s", e.Stream, e.Position, e.Type)
	}
	switch e.Type {
	case EventNewMessage:
		return fmt.Sprintf("%s seq %d from %s (maxSeq %d, readSeq %d, unread %d)", head, e.Seq, e.SendID, e.MaxSeq, e.ReadSeq, e.UnreadCount)
	case EventRead:
		return fmt.Sprintf("%s readSeq %d (unread %d)", head, e.ReadSeq, e.UnreadCount)
	case EventClear:
		return fmt.Sprintf("%s minSeq %d (for everyone: %v, unread %d)", head, e.MinSeq, e.ForEveryone, e.UnreadCount)
	case EventJoin:
		return fmt.Sprintf("%s (maxSeq %d, minSeq %d, readSeq %d, unread %d)", head, e.MaxSeq, e.MinSeq, e.ReadSeq, e.UnreadCount)
	case EventRevoke:
		return fmt.Sprintf("%s seq %d", head, e.Seq)
	case EventDelete:
		return fmt.Sprintf("%s seqs %v (for everyone: %v)", head, e.Seqs, e.ForEveryone)
	}
	return head
}
