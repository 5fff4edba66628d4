package graph

import (
	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/im"
)

// messageOf turns one seq's per-user view into its GraphQL shape.
func messageOf(v im.MessageView) *model.Message {
	out := &model.Message{
		ConversationID: v.ConversationID,
		Seq:            v.Seq,
		Status:         model.MessageStatus(v.Status),
		IsRead:         v.IsRead,
		AtUserIDs:      []string{},
	}
	m := v.Message
	if m == nil {
		return out
	}
	str := func(s string) *string { return &s }
	num := func(n int32) *int { i := int(n); return &i }
	out.ClientMsgID, out.ServerMsgID, out.SendID = str(m.ClientMsgID), str(m.ServerMsgID), str(m.SendID)
	if m.RecvID != "" {
		out.RecvID = str(m.RecvID)
	}
	if m.GroupID != "" {
		out.GroupID = str(m.GroupID)
	}
	out.SessionType = num(m.SessionType)
	out.SendTime = &m.SendTime
	if v.Status == im.StatusOK {
		out.ContentType, out.Content, out.Ex = num(m.ContentType), str(m.Content), str(m.Ex)
		if m.AtUserIDList != nil {
			out.AtUserIDs = m.AtUserIDList
		}
	}
	if v.Revoke != nil {
		out.Revoke = &model.Revoke{UserID: v.Revoke.UserID, Role: int(v.Revoke.Role), Time: v.Revoke.Time}
	}
	return out
}

// messagesOf turns views into their GraphQL shape, in order.
func messagesOf(views []im.MessageView) []*model.Message {
	out := make([]*model.Message, len(views))
	for i, v := range views {
		out[i] = messageOf(v)
	}
	return out
}

// validateSeqs checks the seqs a client names (see im.ValidateSeqs).
func validateSeqs(seqs []int64) error { return im.ValidateSeqs(seqs) }

func kindOf(k im.ConversationKind) model.ConversationKind {
	switch k {
	case im.SingleChat:
		return model.ConversationKindSingle
	case im.GroupChat:
		return model.ConversationKindGroup
	}
	return model.ConversationKindNotification
}
