package im

// The message model has three layers, as in OpenIM's store, and keeps OpenIM's field names (in
// the bson tags) so that an existing OpenIM database can be read:
//
//	Chunk   one document per ChunkSize seqs of a conversation
//	Slot    the state that changes after sending: revoked, deleted for some users, read
//	Message the message as sent; written once and never changed
//
// The json tags are the encoding of cached chunks in Redis.

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
	RecvID           string          `bson:"recv_id" json:"recv_id"`
	GroupID          string          `bson:"group_id" json:"group_id"`
	ClientMsgID      string          `bson:"client_msg_id" json:"client_msg_id"`
	ServerMsgID      string          `bson:"server_msg_id" json:"server_msg_id"`
	SenderPlatformID int32           `bson:"sender_platform_id" json:"sender_platform_id"`
	SenderNickname   string          `bson:"sender_nickname" json:"sender_nickname"`
	SenderFaceURL    string          `bson:"sender_face_url" json:"sender_face_url"`
	SessionType      int32           `bson:"session_type" json:"session_type"`
	MsgFrom          int32           `bson:"msg_from" json:"msg_from"`
	ContentType      int32           `bson:"content_type" json:"content_type"`
	Content          string          `bson:"content" json:"content"`
	Seq              int64           `bson:"seq" json:"seq"`
	SendTime         int64           `bson:"send_time" json:"send_time"`
	CreateTime       int64           `bson:"create_time" json:"create_time"`
	Status           int32           `bson:"status" json:"status"`
	IsRead           bool            `bson:"is_read" json:"is_read"`
	Options          map[string]bool `bson:"options" json:"options,omitempty"`
	OfflinePush      *OfflinePush    `bson:"offline_push" json:"offline_push,omitempty"`
	AtUserIDList     []string        `bson:"at_user_id_list" json:"at_user_id_list,omitempty"`
	AttachedInfo     string          `bson:"attached_info" json:"attached_info,omitempty"`
	Ex               string          `bson:"ex" json:"ex,omitempty"`
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
