package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// MentionSource counts and lists a user's unread mentions: msggate's own mention index
// (*mention.Index) or one over an OpenIM deployment's records.
type MentionSource interface {
	// UnreadMentionCounts returns userID's unread mentions in each conversation, aligned with
	// states (userID's states there).
	UnreadMentionCounts(ctx context.Context, userID string, states []im.SeqState) ([]int64, error)
	// UnreadMentionSeqs returns the seqs of userID's first limit unread mentions in st's
	// conversation, oldest first.
	UnreadMentionSeqs(ctx context.Context, userID string, st im.SeqState, limit int) ([]int64, error)
}

var errNoMentions = im.Errorf(im.EUNSUPPORTED, "this gateway keeps no mention index")

// mentionCountLoader batches the request's unreadMentionCount fields: one count for all the
// conversations a depth of the query asks about (a sync summary's page, say).
func (l *Loaders) mentionCountLoader() *requestLoader[string, int64] {
	l.mentionsOnce.Do(func() {
		l.mentionCounts = newRequestLoader(l.opts, "mentions", func(ctx context.Context, ids []string) ([]int64, error) {
			if l.mentions == nil {
				return nil, errNoMentions
			}
			states := make([]im.SeqState, len(ids))
			for i, id := range ids {
				st, err := l.LoadState(ctx, id)
				if err != nil {
					return nil, err
				}
				states[i] = st
			}
			return l.mentions.UnreadMentionCounts(ctx, l.viewer, states)
		})
	})
	return l.mentionCounts
}

// unreadMentionCount answers Conversation.unreadMentionCount.
func unreadMentionCount(ctx context.Context, conversationID string) (int64, error) {
	return loadersFrom(ctx).mentionCountLoader().Load(ctx, conversationID)
}

// unreadMentions answers Conversation.unreadMentions: the seqs from the index, the messages
// through the history reader (so its view applies), any that turned unreadable meanwhile left
// out.
func (r *Resolver) unreadMentions(ctx context.Context, conversationID string, limit *int) ([]*model.Message, error) {
	n, err := im.UnreadMentionsLimit(limit)
	if err != nil {
		return nil, err
	}
	if r.Mentions == nil {
		return nil, errNoMentions
	}
	viewer, conv, err := authorize(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	st, err := stateOf(ctx, conv.ID)
	if err != nil {
		return nil, err
	}
	seqs, err := r.Mentions.UnreadMentionSeqs(ctx, viewer.UserID, st, n)
	if err != nil || len(seqs) == 0 {
		return []*model.Message{}, err
	}
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	views, err := h.Messages(ctx, conv.ID, seqs)
	if err != nil {
		return nil, err
	}
	ok := views[:0]
	for _, v := range views {
		if v.Status == im.StatusOK {
			ok = append(ok, v)
		}
	}
	return messagesOf(ok), nil
}

// totalUnreadMentions answers Viewer.totalUnreadMentions and SyncState.totalUnreadMentions:
// the counts of every conversation on the viewer's list, in one count.
func (r *Resolver) totalUnreadMentions(ctx context.Context) (int64, error) {
	if r.Mentions == nil {
		return 0, errNoMentions
	}
	l := loadersFrom(ctx)
	list, err := l.viewerConversations(ctx)
	if err != nil {
		return 0, err
	}
	counts, err := r.Mentions.UnreadMentionCounts(ctx, l.viewer, list)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// eventMentionCount answers SyncEvent.unreadMentionCount: for an event that carries the
// viewer's counters after the change, the unread mentions in the range they give.
func (r *Resolver) eventMentionCount(ctx context.Context, ev *model.SyncEvent) (*int64, error) {
	if r.Mentions == nil || ev.ConversationID == nil || ev.MaxSeq == nil || ev.ReadSeq == nil || ev.MinSeq == nil {
		return nil, nil
	}
	// A subscription's events are resolved without request loaders: the viewer comes from
	// the connection's authentication.
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	st := im.SeqState{ConversationID: *ev.ConversationID, MaxSeq: *ev.MaxSeq, MinSeq: *ev.MinSeq, ReadSeq: *ev.ReadSeq}
	counts, err := r.Mentions.UnreadMentionCounts(ctx, viewer.UserID, []im.SeqState{st})
	if err != nil {
		return nil, err
	}
	return &counts[0], nil
}

// selects reports whether the object field being resolved selects a field named name.
func selects(ctx context.Context, typeName, name string) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil {
		return false
	}
	for _, f := range graphql.CollectFields(graphql.GetOperationContext(ctx), fc.Field.Selections, []string{typeName}) {
		if f.Name == name {
			return true
		}
	}
	return false
}

// mentionListsOf reads the unreadMentions field f of every node of a conversation page, side
// by side, so that their message reads share the loaders' batches.
func (r *Resolver) mentionListsOf(ctx context.Context, f graphql.CollectedField, nodes []model.ConversationNode) error {
	var limit *int
	if v, ok := f.ArgumentMap(graphql.GetOperationContext(ctx).Variables)["limit"]; ok && v != nil {
		n, err := model.UnmarshalInt(v)
		if err != nil {
			return err
		}
		limit = &n
	}
	lists := make([][]*model.Message, len(nodes))
	siblings := withSiblings(ctx)
	if err := eachNode(ctx, f, len(nodes), func(i int) error {
		msgs, err := r.unreadMentions(siblings, nodes[i].ID, limit)
		lists[i] = msgs
		return err
	}); err != nil {
		return err
	}
	for i := range nodes {
		if nodes[i].MentionLists == nil {
			nodes[i].MentionLists = map[*ast.Field][]*model.Message{}
		}
		nodes[i].MentionLists[f.Field] = lists[i]
	}
	return nil
}
