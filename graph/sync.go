package graph

import (
	"context"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// syncState answers Query.syncState: the state summary, paged like the conversation list. The
// summary and its token come from one Redis round trip; the page's conversations resolve from
// the primed state loader. Without an event log (OpenIM mode) the summary is the viewer's
// conversation list, read from the store's seqs, and the token is empty.
func (r *Resolver) syncState(ctx context.Context, first *int, after *string) (*model.SyncState, error) {
	viewer, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	n, err := im.PageSize("first", first, im.MaxSyncConversations, im.MaxSyncConversations)
	if err != nil {
		return nil, err
	}
	cursor, err := parseAfter(after)
	if err != nil {
		return nil, err
	}
	l := loadersFrom(ctx)
	out := &model.SyncState{}
	var list []im.SeqState
	if log := r.syncLog(); log != nil {
		sum, err := log.Summary(ctx, viewer.UserID)
		if err != nil {
			return nil, err
		}
		out.Token, list = sum.Token.String(), sum.Conversations
		for _, st := range list {
			l.stateLoader().Prime(ctx, st.ConversationID, st)
		}
	} else if list, err = l.viewerConversations(ctx); err != nil {
		return nil, err
	}
	for _, st := range list {
		out.TotalUnread += st.Unread()
	}
	if selects(ctx, "SyncState", "totalUnreadMentions") {
		if out.TotalUnreadMentions, err = r.totalUnreadMentions(ctx); err != nil {
			return nil, err
		}
	}
	p := pageOf(im.PageAfter(list, cursor, n))
	out.Conversations, out.EndCursor, out.HasMore = p.nodes, p.endCursor, p.hasMore
	return out, nil
}

// syncDifference answers Query.syncDifference.
func (r *Resolver) syncDifference(ctx context.Context, since string, limit *int) (*model.SyncDifference, error) {
	log, viewer, err := r.viewerLog(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := log.ParseToken(since)
	if err != nil {
		return nil, err
	}
	n, err := im.PageSize("limit", limit, im.DefaultSyncEvents, im.MaxSyncEvents)
	if err != nil {
		return nil, err
	}
	d, err := log.Difference(ctx, viewer.UserID, tok, n)
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
	out := &model.SyncEvent{Type: model.SyncEventType(ev.Type), Token: eventToken(ev), Position: ev.Position, Time: ev.Time}
	if ev.Stream != "" {
		out.Stream = &ev.Stream
	}
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

// eventToken is an event's entry of the sync token: its stream's cursor after it.
func eventToken(ev im.Event) string {
	switch {
	case ev.Type == im.EventLeave:
		return ev.Stream + "="
	case ev.Stream != "":
		return im.GroupCursorString(ev.Stream, ev.Cursor())
	}
	return ev.Cursor().String()
}
