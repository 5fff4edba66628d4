package openimfeedtest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openimsdk/protocol/constant"
	pbmsg "github.com/openimsdk/protocol/msg"
	"github.com/openimsdk/protocol/sdkws"
	"google.golang.org/protobuf/proto"
)

// PushMessage writes an ordinary message m to toPush as msgtransfer does once it has stored m:
// m.Seq must be the seq msgtransfer gave it (controller/msg_transfer.go BatchInsertChat2Cache).
// The record carries m's chat conversation (si_, sg_, sn_; msgprocessor GetChatConversationIDByMsg)
// and the msg service's key. m's options are the client's; nil means what OpenIM reads as an
// ordinary stored message (an absent option counts as true, msgprocessor Options.Is).
func (p *Producer) PushMessage(ctx context.Context, m *sdkws.MsgData, h Headers) Produced {
	p.t.Helper()
	if m.ServerMsgID == "" || m.SendTime == 0 {
		encapsulate(m)
	}
	return p.Push(ctx, messageKey(m), chatConversationID(m), m, h)
}

// Notification is a notification as OpenIM's NotificationSender.send builds it
// (pkg/notification/msg.go): SendID, RecvID, ContentType, SessionType and the tips as the
// caller (an OpenIM rpc) passes them.
type Notification struct {
	SendID, RecvID string
	ContentType    int32
	SessionType    int32
	Tips           proto.Message
	// Seq is the seq msgtransfer gives the notification in its n_ conversation when OpenIM
	// stores it; OpenIM pushes the notifications it does not store without one, and then Seq
	// is ignored (see Stored).
	Seq int64
}

// Stored says whether OpenIM stores n, and so pushes it with a seq: only notifications whose
// options have "history" (pkg/common/config/parse.go GetOptionsByNotification: reliability
// level 2). Of the tips msggate reads, 2101, 2102 and 2200 are level 2 (pkg/notification/msg.go
// newContentTypeConf), except a 2200 sent to the reader itself, which send lowers to level 1;
// 1703 has no entry there, so level 0, never stored.
func (n Notification) Stored() bool { return notificationOptions(n)[constant.IsHistory] }

// PushNotification writes n to toPush as msgtransfer does: in its notification conversation
// (n_<sorted users> or n_<group>; msgprocessor GetNotificationConversationIDByMsg), with the
// key the msg service gave it.
func (p *Producer) PushNotification(ctx context.Context, n Notification, h Headers) (Produced, *sdkws.MsgData) {
	p.t.Helper()
	m := NotificationMsgData(n)
	return p.Push(ctx, messageKey(m), notificationConversationID(m), m, h), m
}

// NotificationMsgData is the MsgData OpenIM pushes for n: built by NotificationSender.send,
// completed by the msg service (encapsulateMsgData) and, when stored, given its seq.
func NotificationMsgData(n Notification) *sdkws.MsgData {
	detail, err := json.Marshal(n.Tips) // tools jsonutil.StructToJsonString: encoding/json
	if err != nil {
		panic(err)
	}
	content, err := json.Marshal(&sdkws.NotificationElem{Detail: string(detail)})
	if err != nil {
		panic(err)
	}
	m := &sdkws.MsgData{
		SendID:          n.SendID,
		RecvID:          n.RecvID,
		Content:         content,
		MsgFrom:         constant.SysMsgType,
		ContentType:     n.ContentType,
		SessionType:     n.SessionType,
		CreateTime:      time.Now().UnixMilli(),
		ClientMsgID:     md5Hex(strconv.FormatInt(time.Now().UnixNano(), 10) + n.SendID + strconv.FormatInt(seqCounter.Add(1), 10)),
		Options:         notificationOptions(n),
		OfflinePushInfo: &sdkws.OfflinePushInfo{},
	}
	if n.SessionType == constant.ReadGroupChatType {
		m.GroupID = n.RecvID
	}
	encapsulate(m)
	if m.Options[constant.IsHistory] {
		m.Seq = n.Seq
	}
	return m
}

var seqCounter atomic.Int64

// notificationOptions are config.GetOptionsByNotification(newContentTypeConf()[contentType])
// for the tips msggate reads, with send's lowering of a 2200 to self.
func notificationOptions(n Notification) map[string]bool {
	options := map[string]bool{ // msgprocessor.NewOptions
		constant.IsNotNotification:          false,
		constant.IsSendMsg:                  false,
		constant.IsHistory:                  false,
		constant.IsPersistent:               false,
		constant.IsOfflinePush:              false,
		constant.IsUnreadCount:              false,
		constant.IsConversationUpdate:       false,
		constant.IsSenderSync:               true,
		constant.IsNotPrivate:               false,
		constant.IsSenderConversationUpdate: false,
		constant.IsReactionFromCache:        false,
	}
	level := 0
	switch n.ContentType {
	case constant.MsgRevokeNotification, constant.HasReadReceipt, constant.DeleteMsgsNotification:
		level = constant.ReliableNotificationNoMsg
	}
	if n.SendID == n.RecvID && n.ContentType == constant.HasReadReceipt {
		level = constant.UnreliableNotification
	}
	if level == constant.ReliableNotificationNoMsg {
		options[constant.IsHistory] = true
		options[constant.IsPersistent] = true
	}
	return options
}

// encapsulate is the msg service's encapsulateMsgData (internal/rpc/msg/verify.go): a server
// message ID and, when the client gave none, the send time.
func encapsulate(m *sdkws.MsgData) {
	if m.ServerMsgID == "" {
		m.ServerMsgID = md5Hex(time.Now().Format("2006-01-02 15:04:05") + "-" + m.SendID + "-" + strconv.FormatInt(seqCounter.Add(1), 10))
	}
	if m.SendTime == 0 {
		m.SendTime = time.Now().UnixMilli()
	}
}

// Push is controller/msg_transfer.go MsgToPushMQ itself: m in conversationID, with key. A test
// uses it for records the helpers above do not build (one whose content is damaged).
func (p *Producer) Push(ctx context.Context, key, conversationID string, m *sdkws.MsgData, h Headers) Produced {
	p.t.Helper()
	value, err := proto.Marshal(&pbmsg.PushMsgDataToMQ{MsgData: m, ConversationID: conversationID})
	if err != nil {
		p.t.Fatalf("openimfeedtest: marshal PushMsgDataToMQ: %v", err)
	}
	return p.ProduceRaw(ctx, key, value, h)
}

// messageKey is the key the msg service sends a message to toRedis with, which msgtransfer keeps
// for toPush (internal/rpc/msg/send.go; pkg/util/conversationutil
// GenConversationUniqueKeyForGroup, GenConversationUniqueKeyForSingle).
func messageKey(m *sdkws.MsgData) string {
	if m.SessionType == constant.ReadGroupChatType {
		return m.GroupID
	}
	return sortedPair(m.SendID, m.RecvID)
}

// chatConversationID is msgprocessor GetChatConversationIDByMsg.
func chatConversationID(m *sdkws.MsgData) string {
	switch m.SessionType {
	case constant.SingleChatType:
		return "si_" + sortedPair(m.SendID, m.RecvID)
	case constant.WriteGroupChatType:
		return "g_" + m.GroupID
	case constant.ReadGroupChatType:
		return "sg_" + m.GroupID
	case constant.NotificationChatType:
		return "sn_" + sortedPair(m.SendID, m.RecvID)
	}
	return ""
}

// notificationConversationID is msgprocessor GetNotificationConversationIDByMsg.
func notificationConversationID(m *sdkws.MsgData) string {
	switch m.SessionType {
	case constant.SingleChatType, constant.NotificationChatType:
		return "n_" + sortedPair(m.SendID, m.RecvID)
	case constant.WriteGroupChatType, constant.ReadGroupChatType:
		return "n_" + m.GroupID
	}
	return ""
}

func sortedPair(a, b string) string {
	l := []string{a, b}
	sort.Strings(l)
	return strings.Join(l, "_")
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
