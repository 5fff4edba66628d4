package graph

import (
	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/im"
)

// messageOf turns one seq's per-user view into its GraphQL shape.
func messageOf(v im.MessageView) *model.Message {
	out := &model.Message{}
	fillMessage(out, &messageValues{}, v)
	return out
}

// messagesOf turns views into their GraphQL shape, in order. The messages and the values
// their optional fields point to are allocated two slices at a time, not a dozen small
// objects a message: a page of a hundred messages made a thousand allocations here.
func messagesOf(views []im.MessageView) []*model.Message {
	msgs := make([]model.Message, len(views))
	vals := make([]messageValues, len(views))
	out := make([]*model.Message, len(views))
	for i, v := range views {
		fillMessage(&msgs[i], &vals[i], v)
		out[i] = &msgs[i]
	}
	return out
}

// messageValues holds the values a model.Message's optional fields point to.
type messageValues struct {
	clientMsgID, serverMsgID, sendID, recvID, groupID, content, ex string
	sessionType, contentType                                       int
	sendTime                                                       int64
}

// fillMessage sets out to v's GraphQL shape, its optional fields pointing into vals.
func fillMessage(out *model.Message, vals *messageValues, v im.MessageView) {
	*out = model.Message{
		ConversationID: v.ConversationID,
		Seq:            v.Seq,
		Status:         model.MessageStatus(v.Status),
		IsRead:         v.IsRead,
		AtUserIDs:      []string{},
	}
	m := v.Message
	if m == nil {
		return
	}
	vals.clientMsgID, vals.serverMsgID, vals.sendID = m.ClientMsgID, m.ServerMsgID, m.SendID
	out.ClientMsgID, out.ServerMsgID, out.SendID = &vals.clientMsgID, &vals.serverMsgID, &vals.sendID
	if m.RecvID != "" {
		vals.recvID = m.RecvID
		out.RecvID = &vals.recvID
	}
	if m.GroupID != "" {
		vals.groupID = m.GroupID
		out.GroupID = &vals.groupID
	}
	vals.sessionType, vals.sendTime = int(m.SessionType), m.SendTime
	out.SessionType, out.SendTime = &vals.sessionType, &vals.sendTime
	if v.Status == im.StatusOK {
		vals.contentType, vals.content, vals.ex = int(m.ContentType), m.Content, m.Ex
		out.ContentType, out.Content, out.Ex = &vals.contentType, &vals.content, &vals.ex
		if m.AtUserIDList != nil {
			out.AtUserIDs = m.AtUserIDList
		}
	}
	if v.Revoke != nil {
		out.Revoke = &model.Revoke{UserID: v.Revoke.UserID, Role: int(v.Revoke.Role), Time: v.Revoke.Time}
	}
}

func kindOf(k im.ConversationKind) model.ConversationKind {
	switch k {
	case im.SingleChat:
		return model.ConversationKindSingle
	case im.GroupChat:
		return model.ConversationKindGroup
	}
	return model.ConversationKindNotification
}
