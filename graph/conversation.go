package graph

import (
	"context"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// authorize returns the viewer and the parsed conversation when the viewer may read it.
func authorize(ctx context.Context, conversationID string) (auth.Viewer, im.Conversation, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	conv, err := im.ParseConversationID(conversationID)
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	member, err := loadersFrom(ctx).access.Load(ctx, conversationID)()
	if err != nil {
		return auth.Viewer{}, im.Conversation{}, err
	}
	if !member {
		return auth.Viewer{}, im.Conversation{}, im.Errorf(im.EFORBIDDEN,
			"conversation %s does not exist or you are not a member of it", conversationID)
	}
	return viewer, conv, nil
}

// stateOf returns the viewer's seq state in a conversation through the request's loader.
func stateOf(ctx context.Context, conversationID string) (im.SeqState, error) {
	return loadersFrom(ctx).states.Load(ctx, conversationID)()
}

// viewerState returns the viewer and their state in a conversation already authorized (a
// Conversation object exists only after authorize).
func viewerState(ctx context.Context, conversationID string) (auth.Viewer, im.SeqState, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return auth.Viewer{}, im.SeqState{}, err
	}
	st, err := stateOf(ctx, conversationID)
	return viewer, st, err
}

// viewsOf reads seqs through the request's chunk loader and applies the viewer's view. The
// result is aligned with seqs.
func viewsOf(ctx context.Context, viewer, conversationID string, seqs []int64) ([]im.MessageView, error) {
	groups := im.GroupSeqsByDocID(conversationID, seqs)
	docIDs := make([]string, len(groups))
	for i, g := range groups {
		docIDs[i] = g.DocID
	}
	chunks, errs := loadersFrom(ctx).chunks.LoadMany(ctx, docIDs)()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	byDoc := make(map[string]*im.Chunk, len(chunks))
	for i, c := range chunks {
		byDoc[docIDs[i]] = c
	}
	out := make([]im.MessageView, len(seqs))
	for i, seq := range seqs {
		out[i] = im.ViewSlot(conversationID, seq, byDoc[im.DocID(conversationID, seq)].Slot(seq), viewer)
	}
	return out, nil
}

// messagesBySeq answers Query.messages.
func messagesBySeq(ctx context.Context, conversationID string, seqs []int64) ([]*model.Message, error) {
	if err := validateSeqs(seqs); err != nil {
		return nil, err
	}
	viewer, conv, err := authorize(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	st, err := stateOf(ctx, conv.ID)
	if err != nil {
		return nil, err
	}
	// A seq below the viewer's min seq existed and is gone for them (retention, clearing):
	// that is an answer of its own, not a message left out, which a client would read as a
	// hole to fetch again. Seqs above the max seq do not exist yet and are left out.
	lo := st.VisibleMin()
	visible := seqs[:0:0]
	for _, s := range seqs {
		if s < lo {
			return nil, historyUnavailable(conv.ID, lo)
		}
		if s <= st.MaxSeq {
			visible = append(visible, s)
		}
	}
	views, err := viewsOf(ctx, viewer.UserID, conv.ID, visible)
	if err != nil {
		return nil, err
	}
	return messagesOf(views), nil
}

// historyPage answers Conversation.history.
func historyPage(ctx context.Context, conversationID string, beforeSeq, afterSeq *int64, limit *int) (*model.History, error) {
	n, err := pageSize("history limit", limit, im.DefaultHistoryLimit, im.MaxHistoryLimit)
	if err != nil {
		return nil, err
	}
	var before, after int64
	for _, b := range []struct {
		v   *int64
		out *int64
	}{{beforeSeq, &before}, {afterSeq, &after}} {
		if b.v != nil {
			if err := im.ValidateSeq(*b.v); err != nil {
				return nil, err
			}
			*b.out = *b.v
		}
	}
	viewer, st, err := viewerState(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	// A page asked for before a seq, whose every seq lies below the viewer's min seq, is
	// history that is gone (retention, clearing): say so rather than answer an empty page. A
	// page that reaches the min seq answers its readable part with hasMoreBefore false.
	if before > 0 {
		first := max(after+1, 1)
		if last := before - 1; first <= last && last < st.VisibleMin() {
			return nil, historyUnavailable(conversationID, st.VisibleMin())
		}
	}
	from, to := im.HistoryPage(st.VisibleMin(), st.MaxSeq, before, after, n)
	var seqs []int64
	for s := from; s <= to; s++ {
		seqs = append(seqs, s)
	}
	views, err := viewsOf(ctx, viewer.UserID, conversationID, seqs)
	if err != nil {
		return nil, err
	}
	h := &model.History{Messages: make([]*model.Message, len(views))}
	for i, v := range views {
		h.Messages[i] = messageOf(v)
	}
	if from <= to {
		h.HasMoreBefore, h.HasMoreAfter = from > st.VisibleMin(), to < st.MaxSeq
	} else {
		h.HasMoreBefore = before > st.VisibleMin() && st.MaxSeq >= st.VisibleMin()
		h.HasMoreAfter = after > 0 && after < st.MaxSeq
	}
	return h, nil
}

// lastMessage answers Conversation.lastMessage: the message at the max seq, if visible.
func lastMessage(ctx context.Context, conversationID string) (*model.Message, error) {
	viewer, st, err := viewerState(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	if st.MaxSeq < st.VisibleMin() {
		return nil, nil
	}
	views, err := viewsOf(ctx, viewer.UserID, conversationID, []int64{st.MaxSeq})
	if err != nil {
		return nil, err
	}
	return messageOf(views[0]), nil
}
