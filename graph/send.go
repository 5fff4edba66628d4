package graph

import (
	"context"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
)

// messageFromInput builds the message the viewer sends (the sender is set by ingest.Send).
// Options map to OpenIM's option keys; an omitted option keeps its default (true), so an input
// without options is a stored chat message.
func messageFromInput(in model.SendMessageInput) (*im.Message, error) {
	m := &im.Message{
		ContentType:  int32(in.ContentType),
		Content:      in.Content,
		AtUserIDList: in.AtUserIDs,
		MsgFrom:      100, // OpenIM's "user" origin
	}
	if in.ContentType < 0 || in.ContentType > 1<<30 {
		return nil, im.Errorf(im.EINVALID, "contentType %d is out of range", in.ContentType)
	}
	if (in.RecvID == nil) == (in.GroupID == nil) {
		return nil, im.Errorf(im.EINVALID, "exactly one of recvID and groupID must be given")
	}
	if in.RecvID != nil {
		m.RecvID = *in.RecvID
	}
	if in.GroupID != nil {
		m.GroupID = *in.GroupID
	}
	if in.ClientMsgID != nil {
		if *in.ClientMsgID == "" {
			return nil, im.Errorf(im.EINVALID, "clientMsgID must not be empty when given")
		}
		m.ClientMsgID = *in.ClientMsgID
	}
	if in.Ex != nil {
		m.Ex = *in.Ex
	}
	if o := in.Options; o != nil {
		m.Options = map[string]bool{}
		for key, v := range map[string]*bool{
			im.OptionHistory: o.IsHistory, im.OptionNotNotification: o.IsNotNotification, im.OptionSendMsg: o.IsSendMsg,
		} {
			if v != nil {
				m.Options[key] = *v
			}
		}
	}
	return m, nil
}

// sendMessage answers Mutation.sendMessage. Who may send what is ingest's to decide; the
// boundary supplies its membership check of the chat conversation.
func (r *Resolver) sendMessage(ctx context.Context, in model.SendMessageInput) (*model.Message, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	m, err := messageFromInput(in)
	if err != nil {
		return nil, err
	}
	member := func(ctx context.Context, conversationID string) error {
		_, _, err := authorize(ctx, conversationID)
		return err
	}
	p, err := r.Ingester.Send(ctx, ingest.Sender{UserID: viewer.UserID, Admin: viewer.Admin}, m, member)
	if err != nil {
		return nil, err
	}
	return messageOf(im.MessageView{ConversationID: p.ConversationID, Seq: p.Seq, Status: im.StatusOK, Message: p.Message}), nil
}

// markConversationRead answers Mutation.markConversationRead and primes the request's state
// loader, so the returned conversation shows the new read seq and unread count.
func (r *Resolver) markConversationRead(ctx context.Context, conversationID string, readSeq *int64) (*model.Conversation, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	viewer, conv, err := authorize(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	st, err := r.Ingester.MarkRead(ctx, r.Chunks, viewer.UserID, conv, readSeq)
	if err != nil {
		return nil, err
	}
	loadersFrom(ctx).stateLoader().Replace(ctx, conv.ID, st)
	return &model.Conversation{ID: conv.ID}, nil
}
