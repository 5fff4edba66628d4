package openim

import (
	"encoding/json"

	"github.com/msggate/msggate/internal/im"
)

// OpenIM rewrites quote messages when it reads them (pkg/common/storage/controller/msg.go
// handlerDBMsg, run by handlerQuote for every message GetMessageBySeqs and GetLastMessage
// return). A quote (content type 114, constant.Quote) carries a JSON content
// {"text", "quoteMessage": {the quoted message, with camelCase keys}, "messageEntityList"}.
// When the quoted message has since been revoked, OpenIM replaces the quoted message's
// contentType with 2101 (constant.MsgRevokeNotification) and its content with the revoke
// notification of the quoted message, so the quoted text is no longer shown; it decodes the
// content into its own struct and encodes it again, which also drops every key its struct does
// not have (the quoted message's textElem and the like, which would otherwise still hold the
// text). In detail, for a quote whose content and quoteMessage.content are not empty:
//
//   - quoteMessage.content "e30=" (base64 of "{}") becomes "{}", and the content is re-encoded.
//   - a quoted seq <= 0 whose contentType is already 2101 is left so.
//   - a quoted seq <= 0 otherwise is treated as revoked, with content "{}".
//   - a quoted seq > 0 is read from MongoDB; when its chunk does not exist or the slot holds
//     no message, or the message is not revoked, nothing more changes.
//   - a revoked quoted message gives contentType 2101 and content
//     {"detail": <MessageRevokedContent JSON>}, built from the slot (handlerDeleteAndRevoked).
//
// A content OpenIM cannot decode is left as it is.

// Content types and status OpenIM uses here (openimsdk/protocol constant.go).
const (
	contentTypeQuote        int32 = 114
	contentTypeRevokeNotice int32 = 2101
	emptyObjectBase64             = "e30="
)

// quoteContent mirrors the struct handlerDBMsg decodes a quote into.
type quoteContent struct {
	Text              string          `json:"text,omitempty"`
	QuoteMessage      *quotedMessage  `json:"quoteMessage,omitempty"`
	MessageEntityList json.RawMessage `json:"messageEntityList,omitempty"`
}

// quotedMessage mirrors handlerDBMsg's MsgData: the keys OpenIM keeps in quoteMessage.
type quotedMessage struct {
	SendID           string          `json:"sendID"`
	RecvID           string          `json:"recvID"`
	GroupID          string          `json:"groupID"`
	ClientMsgID      string          `json:"clientMsgID"`
	ServerMsgID      string          `json:"serverMsgID"`
	SenderPlatformID int32           `json:"senderPlatformID"`
	SenderNickname   string          `json:"senderNickname"`
	SenderFaceURL    string          `json:"senderFaceURL"`
	SessionType      int32           `json:"sessionType"`
	MsgFrom          int32           `json:"msgFrom"`
	ContentType      int32           `json:"contentType"`
	Content          string          `json:"content"`
	Seq              int64           `json:"seq"`
	SendTime         int64           `json:"sendTime"`
	CreateTime       int64           `json:"createTime"`
	Status           int32           `json:"status"`
	IsRead           bool            `json:"isRead"`
	Options          map[string]bool `json:"options,omitempty"`
	OfflinePushInfo  json.RawMessage `json:"offlinePushInfo"`
	AtUserIDList     []string        `json:"atUserIDList"`
	AttachedInfo     string          `json:"attachedInfo"`
	Ex               string          `json:"ex"`
	KeyVersion       int32           `json:"keyVersion"`
	DstUserIDs       []string        `json:"dstUserIDs"`
}

// revokedContent is sdkws.MessageRevokedContent's JSON (openimsdk/protocol sdkws).
type revokedContent struct {
	RevokerID                   string `json:"revokerID"`
	RevokerRole                 int32  `json:"revokerRole"`
	ClientMsgID                 string `json:"clientMsgID"`
	RevokerNickname             string `json:"revokerNickname"`
	RevokeTime                  int64  `json:"revokeTime"`
	SourceMessageSendTime       int64  `json:"sourceMessageSendTime"`
	SourceMessageSendID         string `json:"sourceMessageSendID"`
	SourceMessageSenderNickname string `json:"sourceMessageSenderNickname"`
	SessionType                 int32  `json:"sessionType"`
	Seq                         int64  `json:"seq"`
	Ex                          string `json:"ex"`
}

// QuotedSeq returns the seq of the message m quotes when m is a quote whose quoted message
// must be looked up before ViewQuote can decide (a quoted seq above 0). The view path collects
// these seqs, reads their chunks in one Chunks call, and passes each quoted slot to ViewQuote.
func QuotedSeq(m *im.Message) (int64, bool) {
	q, ok := parseQuote(m)
	if !ok || q.QuoteMessage.Seq <= 0 {
		return 0, false
	}
	return q.QuoteMessage.Seq, true
}

// ViewQuote applies OpenIM's quote rewrite to m, given the slot of the quoted seq (nil when
// its chunk does not exist). It returns m itself when nothing changes, otherwise a copy with a
// new Content; m is never modified, so cached messages stay shared.
func ViewQuote(m *im.Message, quoted *im.Slot) *im.Message {
	q, ok := parseQuote(m)
	if !ok {
		return m
	}
	changed := false
	qm := q.QuoteMessage
	if qm.Content == emptyObjectBase64 {
		qm.Content, changed = "{}", true
	}
	switch {
	case qm.Seq <= 0 && qm.ContentType == contentTypeRevokeNotice:
	case qm.Seq <= 0:
		qm.ContentType, qm.Content, changed = contentTypeRevokeNotice, "{}", true
	case quoted != nil && quoted.Msg != nil && quoted.Revoke != nil && quoted.Msg.Status != im.DeletedMessageStatus:
		notice, err := revokeNotice(quoted)
		if err != nil {
			return m
		}
		qm.ContentType, qm.Content, changed = contentTypeRevokeNotice, notice, true
	}
	if !changed {
		return m
	}
	content, err := json.Marshal(q)
	if err != nil {
		return m
	}
	out := *m
	out.Content = string(content)
	return &out
}

// parseQuote decodes m's content when m is a quote OpenIM would look at.
func parseQuote(m *im.Message) (quoteContent, bool) {
	var q quoteContent
	if m == nil || m.ContentType != contentTypeQuote || m.Content == "" {
		return q, false
	}
	if err := json.Unmarshal([]byte(m.Content), &q); err != nil {
		return q, false
	}
	if q.QuoteMessage == nil || q.QuoteMessage.Content == "" {
		return q, false
	}
	return q, true
}

// revokeNotice is the content OpenIM gives a revoked message: a notification element whose
// detail is the JSON of who revoked which message.
func revokeNotice(slot *im.Slot) (string, error) {
	m, r := slot.Msg, slot.Revoke
	detail, err := json.Marshal(revokedContent{
		RevokerID: r.UserID, RevokerRole: r.Role, ClientMsgID: m.ClientMsgID,
		RevokerNickname: r.Nickname, RevokeTime: r.Time,
		SourceMessageSendTime: m.SendTime, SourceMessageSendID: m.SendID,
		SourceMessageSenderNickname: m.SenderNickname, SessionType: m.SessionType,
		Seq: m.Seq, Ex: m.Ex,
	})
	if err != nil {
		return "", err
	}
	notice, err := json.Marshal(struct {
		Detail string `json:"detail"`
	}{string(detail)})
	return string(notice), err
}
