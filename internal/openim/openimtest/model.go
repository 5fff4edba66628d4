package openimtest

import "time"

// The record types below repeat OpenIM v3.8.3's models (pkg/common/storage/model) field for
// field: same order, same Go types, same bson tags, no omitempty and no json tags. The MongoDB
// driver therefore encodes them as OpenIM's does (int32 fields as int32, int64 as int64, nil
// maps and slices as null), and encoding/json, which OpenIM uses for its Redis message cache,
// gives the same keys (Go field names).

// MsgDoc is model.MsgDocModel, one chunk of 100 seqs.
type MsgDoc struct {
	DocID string     `bson:"doc_id"`
	Msg   []*MsgInfo `bson:"msgs"`
}

// MsgInfo is model.MsgInfoModel, one slot.
type MsgInfo struct {
	Msg     *MsgData `bson:"msg"`
	Revoke  *Revoke  `bson:"revoke"`
	DelList []string `bson:"del_list"`
	IsRead  bool     `bson:"is_read"`
}

// MsgData is model.MsgDataModel, a message.
type MsgData struct {
	SendID           string          `bson:"send_id"`
	RecvID           string          `bson:"recv_id"`
	GroupID          string          `bson:"group_id"`
	ClientMsgID      string          `bson:"client_msg_id"`
	ServerMsgID      string          `bson:"server_msg_id"`
	SenderPlatformID int32           `bson:"sender_platform_id"`
	SenderNickname   string          `bson:"sender_nickname"`
	SenderFaceURL    string          `bson:"sender_face_url"`
	SessionType      int32           `bson:"session_type"`
	MsgFrom          int32           `bson:"msg_from"`
	ContentType      int32           `bson:"content_type"`
	Content          string          `bson:"content"`
	Seq              int64           `bson:"seq"`
	SendTime         int64           `bson:"send_time"`
	CreateTime       int64           `bson:"create_time"`
	Status           int32           `bson:"status"`
	IsRead           bool            `bson:"is_read"`
	Options          map[string]bool `bson:"options"`
	OfflinePush      *OfflinePush    `bson:"offline_push"`
	AtUserIDList     []string        `bson:"at_user_id_list"`
	AttachedInfo     string          `bson:"attached_info"`
	Ex               string          `bson:"ex"`
}

// Revoke is model.RevokeModel.
type Revoke struct {
	Role     int32  `bson:"role"`
	UserID   string `bson:"user_id"`
	Nickname string `bson:"nickname"`
	Time     int64  `bson:"time"`
}

// OfflinePush is model.OfflinePushModel.
type OfflinePush struct {
	Title         string `bson:"title"`
	Desc          string `bson:"desc"`
	Ex            string `bson:"ex"`
	IOSPushSound  string `bson:"ios_push_sound"`
	IOSBadgeCount bool   `bson:"ios_badge_count"`
}

// Conversation is model.Conversation, one entry of a user's conversation list.
type Conversation struct {
	OwnerUserID           string    `bson:"owner_user_id"`
	ConversationID        string    `bson:"conversation_id"`
	ConversationType      int32     `bson:"conversation_type"`
	UserID                string    `bson:"user_id"`
	GroupID               string    `bson:"group_id"`
	RecvMsgOpt            int32     `bson:"recv_msg_opt"`
	IsPinned              bool      `bson:"is_pinned"`
	IsPrivateChat         bool      `bson:"is_private_chat"`
	BurnDuration          int32     `bson:"burn_duration"`
	GroupAtType           int32     `bson:"group_at_type"`
	AttachedInfo          string    `bson:"attached_info"`
	Ex                    string    `bson:"ex"`
	MaxSeq                int64     `bson:"max_seq"`
	MinSeq                int64     `bson:"min_seq"`
	CreateTime            time.Time `bson:"create_time"`
	IsMsgDestruct         bool      `bson:"is_msg_destruct"`
	MsgDestructTime       int64     `bson:"msg_destruct_time"`
	LatestMsgDestructTime time.Time `bson:"latest_msg_destruct_time"`
}

// GroupMember is model.GroupMember.
type GroupMember struct {
	GroupID        string    `bson:"group_id"`
	UserID         string    `bson:"user_id"`
	Nickname       string    `bson:"nickname"`
	FaceURL        string    `bson:"face_url"`
	RoleLevel      int32     `bson:"role_level"`
	JoinTime       time.Time `bson:"join_time"`
	JoinSource     int32     `bson:"join_source"`
	InviterUserID  string    `bson:"inviter_user_id"`
	OperatorUserID string    `bson:"operator_user_id"`
	MuteEndTime    time.Time `bson:"mute_end_time"`
	Ex             string    `bson:"ex"`
}

// OpenIM's numbers (openimsdk/protocol constant).
const (
	SingleChatType       = 1
	WriteGroupChatType   = 2
	ReadGroupChatType    = 3
	NotificationChatType = 4

	ContentText  = 101
	ContentQuote = 114

	StatusSending     = 1
	StatusSendSuccess = 2

	RoleOwner  = 100
	RoleAdmin  = 60
	RoleMember = 20

	TokenNormal  = 0
	TokenInvalid = 1
	TokenKicked  = 2
)
