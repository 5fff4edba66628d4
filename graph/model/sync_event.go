package model

// SyncEvent is a GraphQL SyncEvent. Fields that do not apply to an event's type are nil, so
// they read as null.
type SyncEvent struct {
	Type           SyncEventType `json:"type"`
	Token          string        `json:"token"`
	Position       int64         `json:"position"`
	Stream         *string       `json:"stream,omitempty"`
	Time           int64         `json:"time"`
	ConversationID *string       `json:"conversationID,omitempty"`
	Seq            *int64        `json:"seq,omitempty"`
	SendID         *string       `json:"sendID,omitempty"`
	Seqs           []int64       `json:"seqs,omitempty"`
	ForEveryone    *bool         `json:"forEveryone,omitempty"`
	MaxSeq         *int64        `json:"maxSeq,omitempty"`
	MinSeq         *int64        `json:"minSeq,omitempty"`
	ReadSeq        *int64        `json:"readSeq,omitempty"`
	UnreadCount    *int64        `json:"unreadCount,omitempty"`
}
