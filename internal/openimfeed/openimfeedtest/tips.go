package openimfeedtest

import (
	"time"

	"github.com/openimsdk/protocol/constant"
	"github.com/openimsdk/protocol/sdkws"
)

// The notifications below are the ones OpenIM v3.8.3's msg rpc sends for the four tips msggate
// reads, with the sender, receiver, session type and tips that rpc passes. notificationSeq is the
// seq the notification gets in its n_ conversation when OpenIM stores it (Notification.Seq).

// Revoke is internal/rpc/msg/revoke.go RevokeMsg: revoker revoked revoked (seq seq of
// conversationID). The notification goes to the group or to the revoked message's receiver, in
// the revoked message's session type.
func Revoke(revoker string, revoked *sdkws.MsgData, conversationID string, seq, notificationSeq int64) Notification {
	recvID := revoked.RecvID
	if revoked.SessionType == constant.ReadGroupChatType {
		recvID = revoked.GroupID
	}
	return Notification{
		SendID: revoker, RecvID: recvID,
		ContentType: constant.MsgRevokeNotification, SessionType: revoked.SessionType,
		Tips: &sdkws.RevokeMsgTips{
			RevokerUserID:  revoker, // mcontext.GetOpUserID: the revoker's own request
			ClientMsgID:    revoked.ClientMsgID,
			RevokeTime:     time.Now().UnixMilli(),
			Seq:            seq,
			SesstionType:   revoked.SessionType,
			ConversationID: conversationID,
		},
		Seq: notificationSeq,
	}
}

// DeleteForEveryone is internal/rpc/msg/delete.go DeleteMsgs with isSyncOther: sent to the
// conversation's other side (peer, or group for groups; server.go conversationAndGetRecvID) in
// the conversation's type.
func DeleteForEveryone(userID, recvID string, conversationType int32, conversationID string, seqs []int64, notificationSeq int64) Notification {
	return Notification{
		SendID: userID, RecvID: recvID,
		ContentType: constant.DeleteMsgsNotification, SessionType: conversationType,
		Tips: &sdkws.DeleteMsgsTips{UserID: userID, ConversationID: conversationID, Seqs: seqs},
		Seq:  notificationSeq,
	}
}

// DeleteForSelf is internal/rpc/msg/delete.go DeleteMsgs with only isSyncSelf: sent by userID
// to userID, single chat type.
func DeleteForSelf(userID, conversationID string, seqs []int64, notificationSeq int64) Notification {
	return Notification{
		SendID: userID, RecvID: userID,
		ContentType: constant.DeleteMsgsNotification, SessionType: constant.SingleChatType,
		Tips: &sdkws.DeleteMsgsTips{UserID: userID, ConversationID: conversationID, Seqs: seqs},
		Seq:  notificationSeq,
	}
}

// ClearForSelf is internal/rpc/msg/delete.go clearConversation without isSyncOther, with
// isSyncSelf: one notification to userID for all the conversations. Never stored.
func ClearForSelf(userID string, conversationIDs []string) Notification {
	return Notification{
		SendID: userID, RecvID: userID,
		ContentType: constant.ClearConversationNotification, SessionType: constant.SingleChatType,
		Tips: &sdkws.ClearConversationTips{UserID: userID, ConversationIDs: conversationIDs},
	}
}

// ClearForEveryone is internal/rpc/msg/delete.go clearConversation with isSyncOther: one
// notification per conversation, to its other side, in its type. Never stored.
func ClearForEveryone(userID, recvID string, conversationType int32, conversationID string) Notification {
	return Notification{
		SendID: userID, RecvID: recvID,
		ContentType: constant.ClearConversationNotification, SessionType: conversationType,
		Tips: &sdkws.ClearConversationTips{UserID: userID, ConversationIDs: []string{conversationID}},
	}
}

// MarkAsReadSingle is internal/rpc/msg/as_read.go MarkConversationAsRead in a single chat:
// sent to the peer in the conversation's type, stored.
func MarkAsReadSingle(userID, peerID, conversationID string, seqs []int64, hasReadSeq, notificationSeq int64) Notification {
	return Notification{
		SendID: userID, RecvID: peerID,
		ContentType: constant.HasReadReceipt, SessionType: constant.SingleChatType,
		Tips: &sdkws.MarkAsReadTips{MarkAsReadUserID: userID, ConversationID: conversationID, Seqs: seqs, HasReadSeq: hasReadSeq},
		Seq:  notificationSeq,
	}
}

// MarkAsReadSelf is internal/rpc/msg/as_read.go MarkConversationAsRead in a group or
// notification conversation: sent by userID to userID, single chat type, not stored.
func MarkAsReadSelf(userID, conversationID string, hasReadSeq int64) Notification {
	return Notification{
		SendID: userID, RecvID: userID,
		ContentType: constant.HasReadReceipt, SessionType: constant.SingleChatType,
		Tips: &sdkws.MarkAsReadTips{MarkAsReadUserID: userID, ConversationID: conversationID, HasReadSeq: hasReadSeq},
	}
}
