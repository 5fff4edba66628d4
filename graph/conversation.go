package graph

import (
	"context"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// authorize returns the viewer and the parsed conversation when the viewer may read it. The ID
// is checked and access decided by the request's conversation source (its store's rules): an
// ID is never taken apart here.
func authorize(ctx context.Context, conversationID string) (auth.Viewer, im.Conversation, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	l := loadersFrom(ctx)
	conv, err := l.convs.ParseConversationID(conversationID)
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	member, err := l.accessLoader().Load(ctx, conversationID)
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	if !member {
		return auth.Viewer{}, im.Conversation{}, im.Errorf(im.EFORBIDDEN,
			"conversation %s does not exist or you are not a member of it", conversationID)
	}
	return viewer, conv, nil
}

// conversationKind answers Conversation.kind, by the store's ID rules.
func conversationKind(ctx context.Context, conversationID string) (model.ConversationKind, error) {
	c, err := loadersFrom(ctx).convs.ParseConversationID(conversationID)
	return kindOf(c.Kind), err
}

// stateOf returns the viewer's seq state in a conversation through the request's loader.
func stateOf(ctx context.Context, conversationID string) (im.SeqState, error) {
	return loadersFrom(ctx).LoadState(ctx, conversationID)
}

// historyOf returns the viewer's history reader over the request's loaders.
func (r *Resolver) historyOf(ctx context.Context) (history.Reader, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return history.Reader{}, err
	}
	l := loadersFrom(ctx)
	return history.Reader{Viewer: viewer.UserID, Chunks: l, States: l, Adjust: r.AdjustViews, ClientMsgs: r.ClientMsgs}, nil
}

// messagesBySeq answers Query.messages. Bad seqs are refused before membership is asked.
func (r *Resolver) messagesBySeq(ctx context.Context, conversationID string, seqs []int64) ([]*model.Message, error) {
	if err := im.ValidateSeqs(seqs); err != nil {
		return nil, err
	}
	_, conv, err := authorize(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	views, err := h.Messages(ctx, conv.ID, seqs)
	if err != nil {
		return nil, err
	}
	return messagesOf(views), nil
}

// historyPage answers Conversation.history.
func (r *Resolver) historyPage(ctx context.Context, conversationID string, q history.PageQuery) (*model.History, error) {
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	p, err := h.Page(ctx, conversationID, q)
	if err != nil {
		return nil, err
	}
	return &model.History{Messages: messagesOf(p.Messages), HasMoreBefore: p.HasMoreBefore, HasMoreAfter: p.HasMoreAfter}, nil
}

// lastMessage answers Conversation.lastMessage: the message at the max seq, if visible.
func (r *Resolver) lastMessage(ctx context.Context, conversationID string) (*model.Message, error) {
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	v, err := h.LastMessage(ctx, conversationID)
	if err != nil || v == nil {
		return nil, err
	}
	return messageOf(*v), nil
}
