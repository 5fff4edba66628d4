package im

import "encoding/json"

// The message model has three layers, as in OpenIM's store, and keeps OpenIM's field names (in
// the bson tags) so that an existing OpenIM database can be read:
//
//	Chunk   one document per ChunkSize seqs of a conversation
//	Slot    the state that changes after sending: revoked, deleted for some users, read
//	Message the message as sent; written once and never changed
//
// The json tags are the encoding of cached chunks in Redis. Empty message fields are left out
// of both encodings: a chunk document holds 100 messages, and the smaller it is, the faster
// every store reads it (the layout benchmark's figure is in docs/performance.md).
// OpenIM reads a missing field as its zero value, so the documents stay compatible.

// Session types, as OpenIM numbers them.
const (
	SessionSingle       int32 = 1
	SessionGroup        int32 = 3
	SessionNotification int32 = 4
)

// Message statuses stored in Message.Status.
const (
	StatusSent int32 = 2
)

// Message is one message as it was sent.
type Message struct {
	SendID           string          `bson:"send_id" json:"send_id"`
	RecvID           string          `bson:"recv_id,omitempty" json:"recv_id,omitempty"`
	GroupID          string          `bson:"group_id,omitempty" json:"group_id,omitempty"`
	ClientMsgID      string          `bson:"client_msg_id,omitempty" json:"client_msg_id,omitempty"`
	ServerMsgID      string          `bson:"server_msg_id,omitempty" json:"server_msg_id,omitempty"`
	SenderPlatformID int32           `bson:"sender_platform_id,omitempty" json:"sender_platform_id,omitempty"`
	SenderNickname   string          `bson:"sender_nickname,omitempty" json:"sender_nickname,omitempty"`
	SenderFaceURL    string          `bson:"sender_face_url,omitempty" json:"sender_face_url,omitempty"`
	SessionType      int32           `bson:"session_type,omitempty" json:"session_type,omitempty"`
	MsgFrom          int32           `bson:"msg_from,omitempty" json:"msg_from,omitempty"`
	ContentType      int32           `bson:"content_type,omitempty" json:"content_type,omitempty"`
	Content          string          `bson:"content,omitempty" json:"content,omitempty"`
	Seq              int64           `bson:"seq" json:"seq"`
	SendTime         int64           `bson:"send_time" json:"send_time"`
	CreateTime       int64           `bson:"create_time,omitempty" json:"create_time,omitempty"`
	Status           int32           `bson:"status,omitempty" json:"status,omitempty"`
	IsRead           bool            `bson:"is_read,omitempty" json:"is_read,omitempty"`
	Options          map[string]bool `bson:"options,omitempty" json:"options,omitempty"`
	OfflinePush      *OfflinePush    `bson:"offline_push,omitempty" json:"offline_push,omitempty"`
	AtUserIDList     []string        `bson:"at_user_id_list,omitempty" json:"at_user_id_list,omitempty"`
	AttachedInfo     string          `bson:"attached_info,omitempty" json:"attached_info,omitempty"`
	Ex               string          `bson:"ex,omitempty" json:"ex,omitempty"`
}

// OfflinePush is the push notification text OpenIM stores with a message.
type OfflinePush struct {
	Title         string `bson:"title" json:"title"`
	Desc          string `bson:"desc" json:"desc"`
	Ex            string `bson:"ex" json:"ex"`
	IOSPushSound  string `bson:"ios_push_sound" json:"ios_push_sound"`
	IOSBadgeCount bool   `bson:"ios_badge_count" json:"ios_badge_count"`
}

// Revoke records who revoked a message and when.
type Revoke struct {
	Role     int32  `bson:"role" json:"role"`
	UserID   string `bson:"user_id" json:"user_id"`
	Nickname string `bson:"nickname" json:"nickname"`
	Time     int64  `bson:"time" json:"time"`
}

// Slot is one of the ChunkSize positions of a chunk. Msg is nil while the seq holds no message
// (never written, or deleted for everyone).
type Slot struct {
	Msg     *Message `bson:"msg" json:"msg"`
	Revoke  *Revoke  `bson:"revoke" json:"revoke"`
	DelList []string `bson:"del_list" json:"del_list"`
	IsRead  bool     `bson:"is_read" json:"is_read"`
}

// Chunk is the document that holds ChunkSize consecutive seqs of one conversation.
type Chunk struct {
	DocID string `bson:"doc_id" json:"doc_id"`
	Slots []Slot `bson:"msgs" json:"msgs"`
}

// NewChunk returns an empty chunk with all ChunkSize slots allocated, the shape every chunk
// document has from its first write on.
func NewChunk(docID string) *Chunk {
	c := &Chunk{DocID: docID, Slots: make([]Slot, ChunkSize)}
	for i := range c.Slots {
		c.Slots[i].DelList = []string{}
	}
	return c
}

// Slot returns the slot that holds seq, or nil when the chunk is shorter than expected (a
// damaged document is read as missing messages, not as a crash).
func (c *Chunk) Slot(seq int64) *Slot {
	i := SlotIndex(seq)
	if c == nil || i >= len(c.Slots) {
		return nil
	}
	return &c.Slots[i]
}

// DeletedFor reports whether userID deleted the slot's message for themselves.
func (s *Slot) DeletedFor(userID string) bool {
	for _, u := range s.DelList {
		if u == userID {
			return true
		}
	}
	return false
}

// SameMessage reports whether two messages are the same send: a retry of one message carries
// the same sender and client message ID (the server message ID differs per attempt).
func SameMessage(a, b *Message) bool {
	return a != nil && b != nil && a.SendID == b.SendID && a.ClientMsgID == b.ClientMsgID
}

// DecodeChunk reads the JSON form of a chunk of docID (its fields' json names, as a cache
// keeps it): nil when the bytes are not one, damaged, another document's, or not of a chunk's
// shape, so that a reader takes them as a miss.
func DecodeChunk(data []byte, docID string) *Chunk {
	var chunk Chunk
	if json.Unmarshal(data, &chunk) != nil || chunk.DocID != docID || len(chunk.Slots) != ChunkSize {
		return nil
	}
	return &chunk
}
