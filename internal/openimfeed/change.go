package openimfeed

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openimsdk/protocol/constant"
	pbmsg "github.com/openimsdk/protocol/msg"
	"github.com/openimsdk/protocol/sdkws"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
)

// ChangeKind says what a toPush record means to msggate.
type ChangeKind int

const (
	// KindMessage is a message, or a notification msggate does not act on: it is in
	// ConversationID at Seq.
	KindMessage ChangeKind = iota
	// KindRevoke is a MsgRevokeNotification (2101): UserID revoked seq Seqs[0] of
	// TargetConversationID.
	KindRevoke
	// KindDelete is a DeleteMsgsNotification (2102): UserID deleted Seqs of
	// TargetConversationID; for everyone, or for UserID only when the tip went to UserID
	// itself (SendID == RecvID == UserID, OpenIM's isSyncSelf).
	KindDelete
	// KindClear is a ClearConversationNotification (1703): UserID cleared ConversationIDs; for
	// UserID only when the tip went to UserID itself (SendID == RecvID), for everyone when it
	// went to the conversation's other side (RecvID the peer or the group).
	KindClear
	// KindRead is a HasReadReceipt (2200) carrying MarkAsReadTips: UserID has read
	// TargetConversationID up to HasReadSeq (and, in single chats, the seqs Seqs).
	KindRead
)

func (k ChangeKind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindRevoke:
		return "revoke"
	case KindDelete:
		return "delete"
	case KindClear:
		return "clear"
	case KindRead:
		return "read"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Change is one record of toPush, as msggate reads it.
type Change struct {
	Kind ChangeKind
	// ConversationID is PushMsgDataToMQ.conversationID: the conversation the record's message
	// is in. For messages the chat conversation (si_, sg_, sn_); for the tips the notification
	// conversation they are stored in (n_<sorted users> or n_<group>), not the conversation
	// they are about (TargetConversationID).
	ConversationID string
	// Seq is the record message's own seq in ConversationID; 0 when OpenIM gives it none (it
	// stores only messages with the "history" option; ClearConversationNotification and a
	// HasReadReceipt sent to the reader itself are pushed without a seq).
	Seq                     int64
	SendID, RecvID, GroupID string
	SessionType             int32
	ContentType             int32
	ClientMsgID             string
	SendTime                int64 // ms

	// For tips (revoke 2101, delete 2102, clear 1703, read 2200): who did it, and what it is about.
	UserID               string   // revoker / deleter / clearer / reader
	TargetConversationID string   // the conversation the tip is about (revoke, delete, read)
	Seqs                 []int64  // revoke: the one revoked seq; delete: the seqs deleted; read: MarkAsReadTips.seqs
	HasReadSeq           int64    // read
	ConversationIDs      []string // clear: the conversations cleared

	// Where it came from, for logs and tests.
	Partition int32
	Offset    int64
	// OperationID is the record's operationID header (tools mq/kafka GetMQHeaderWithContext):
	// the ID OpenIM logs the request under, to find it in OpenIM's logs.
	OperationID string
}

// decodeChange reads one toPush record. OpenIM writes the value as a protobuf
// msg.PushMsgDataToMQ (pkg/common/storage/controller/msg_transfer.go MsgToPushMQ, through tools
// mq/kafka Producer.SendMessage, which proto.Marshals it); a tip's content is the JSON of
// sdkws.NotificationElem whose detail is the JSON of the tips message, both written with
// encoding/json and the generated json tags (pkg/notification/msg.go NotificationSender.send,
// tools utils/jsonutil StructToJsonString), and read back the same way by OpenIM itself
// (internal/msgtransfer doSetReadSeq).
func decodeChange(r *kgo.Record) (Change, error) {
	var payload pbmsg.PushMsgDataToMQ
	if err := proto.Unmarshal(r.Value, &payload); err != nil {
		return Change{}, fmt.Errorf("not a PushMsgDataToMQ: %w", err)
	}
	m := payload.GetMsgData()
	if m == nil {
		return Change{}, errors.New("PushMsgDataToMQ without msgData")
	}
	c := Change{
		Kind:           KindMessage,
		ConversationID: payload.GetConversationID(),
		Seq:            m.GetSeq(),
		SendID:         m.GetSendID(),
		RecvID:         m.GetRecvID(),
		GroupID:        m.GetGroupID(),
		SessionType:    m.GetSessionType(),
		ContentType:    m.GetContentType(),
		ClientMsgID:    m.GetClientMsgID(),
		SendTime:       m.GetSendTime(),
		Partition:      r.Partition,
		Offset:         r.Offset,
	}
	for _, h := range r.Headers {
		if h.Key == constant.OperationID {
			c.OperationID = string(h.Value)
		}
	}
	switch m.GetContentType() {
	case constant.MsgRevokeNotification:
		var tips sdkws.RevokeMsgTips
		if err := decodeTips(m.GetContent(), &tips); err != nil {
			return Change{}, err
		}
		if tips.ConversationID == "" || tips.Seq <= 0 {
			return Change{}, errors.New("RevokeMsgTips without conversationID or seq")
		}
		c.Kind = KindRevoke
		c.UserID = tips.RevokerUserID
		c.TargetConversationID = tips.ConversationID
		c.Seqs = []int64{tips.Seq}
	case constant.DeleteMsgsNotification:
		var tips sdkws.DeleteMsgsTips
		if err := decodeTips(m.GetContent(), &tips); err != nil {
			return Change{}, err
		}
		if tips.ConversationID == "" {
			return Change{}, errors.New("DeleteMsgsTips without conversationID")
		}
		c.Kind = KindDelete
		c.UserID = tips.UserID
		c.TargetConversationID = tips.ConversationID
		c.Seqs = tips.Seqs
	case constant.ClearConversationNotification:
		var tips sdkws.ClearConversationTips
		if err := decodeTips(m.GetContent(), &tips); err != nil {
			return Change{}, err
		}
		if tips.UserID == "" {
			return Change{}, errors.New("ClearConversationTips without userID")
		}
		c.Kind = KindClear
		c.UserID = tips.UserID
		c.ConversationIDs = tips.ConversationIDs
	case constant.HasReadReceipt:
		var tips sdkws.MarkAsReadTips
		if err := decodeTips(m.GetContent(), &tips); err != nil {
			return Change{}, err
		}
		if tips.ConversationID == "" || tips.MarkAsReadUserID == "" {
			return Change{}, errors.New("MarkAsReadTips without conversationID or markAsReadUserID")
		}
		c.Kind = KindRead
		c.UserID = tips.MarkAsReadUserID
		c.TargetConversationID = tips.ConversationID
		c.Seqs = tips.Seqs
		c.HasReadSeq = tips.HasReadSeq
	}
	return c, nil
}

// decodeTips reads a notification's content: {"detail": "<JSON of the tips>"}. The caller checks
// the fields it needs: a tip without them (detail "null" or "{}") cannot be acted on, and is
// skipped as undecodable rather than applied as a change to nothing.
func decodeTips(content []byte, tips any) error {
	var elem sdkws.NotificationElem
	if err := json.Unmarshal(content, &elem); err != nil {
		return fmt.Errorf("notification content is not a NotificationElem: %w", err)
	}
	if err := json.Unmarshal([]byte(elem.Detail), tips); err != nil {
		return fmt.Errorf("notification detail is not %T: %w", tips, err)
	}
	return nil
}
