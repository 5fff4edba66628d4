package graph

import (
	"context"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// syncState answers Query.syncState: the state summary, paged like the conversation list. The
// summary and its token come from one Redis round trip; the page's conversations resolve from
// the primed state loader.
func syncState(ctx context.Context, first *int, after *string) (*model.SyncState, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	n := im.MaxSyncConversations
	if first != nil {
		n = *first
	}
	switch {
	case n > im.MaxSyncConversations:
		return nil, im.Errorf(im.ELIMIT, "first is at most %d, got %d", im.MaxSyncConversations, n)
	case n < 1:
		return nil, im.Errorf(im.EINVALID, "first must be at least 1")
	}
	var afterTime int64
	var afterID string
	if after != nil {
		if afterTime, afterID, err = decodeCursor(*after); err != nil {
			return nil, err
		}
	}
	l := loadersFrom(ctx)
	sum, err := l.ledger.Summary(ctx, viewer.UserID)
	if err != nil {
		return nil, err
	}
	out := &model.SyncState{Token: sum.Token.String(), Conversations: []*model.Conversation{}}
	start := 0
	for after != nil && start < len(sum.Conversations) && !isAfter(sum.Conversations[start], afterTime, afterID) {
		start++
	}
	end := min(start+n, len(sum.Conversations))
	for _, st := range sum.Conversations {
		out.TotalUnread += st.Unread()
		l.states.Prime(ctx, st.ConversationID, st)
	}
	for _, st := range sum.Conversations[start:end] {
		out.Conversations = append(out.Conversations, &model.Conversation{ID: st.ConversationID})
	}
	if end > start {
		c := encodeCursor(sum.Conversations[end-1])
		out.EndCursor = &c
	}
	out.HasMore = end < len(sum.Conversations)
	return out, nil
}

// syncDifference answers Query.syncDifference.
func syncDifference(ctx context.Context, since string, limit *int) (*model.SyncDifference, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := im.ParseSyncToken(since)
	if err != nil {
		return nil, err
	}
	n := im.DefaultSyncEvents
	if limit != nil {
		n = *limit
	}
	switch {
	case n > im.MaxSyncEvents:
		return nil, im.Errorf(im.ELIMIT, "limit is at most %d, got %d", im.MaxSyncEvents, n)
	case n < 1:
		return nil, im.Errorf(im.EINVALID, "limit must be at least 1")
	}
	d, err := loadersFrom(ctx).ledger.Difference(ctx, viewer.UserID, tok, n)
	if err != nil {
		return nil, err
	}
	out := &model.SyncDifference{Token: d.Token.String(), HasMore: d.HasMore, TooLong: d.TooLong,
		Events: make([]*model.SyncEvent, len(d.Events))}
	for i, ev := range d.Events {
		out.Events[i] = syncEventOf(ev)
	}
	return out, nil
}

// syncEventOf turns a log event into its GraphQL shape; fields its type does not use are nil.
func syncEventOf(ev im.Event) *model.SyncEvent {
	out := &model.SyncEvent{Type: model.SyncEventType(ev.Type), Token: ev.Token().String(), Position: ev.Position, Time: ev.Time}
	if ev.ConversationID != "" {
		out.ConversationID = &ev.ConversationID
	}
	switch ev.Type {
	case im.EventNewMessage:
		out.Seq, out.SendID = &ev.Seq, &ev.SendID
	case im.EventRevoke:
		out.Seq = &ev.Seq
	case im.EventDelete:
		out.Seqs, out.ForEveryone = ev.Seqs, &ev.ForEveryone
	case im.EventClear:
		out.ForEveryone = &ev.ForEveryone
	}
	if ev.Type.Counted() {
		out.MaxSeq, out.MinSeq, out.ReadSeq, out.UnreadCount = &ev.MaxSeq, &ev.MinSeq, &ev.ReadSeq, &ev.Unread
	}
	return out
}
