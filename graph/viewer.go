package graph

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// Page sizes of the conversation list.
const (
	defaultConversationPage = 20
	maxConversationPage     = 100
)

// viewerOf answers Query.viewer.
func viewerOf(ctx context.Context) (*model.Viewer, error) {
	v, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	return &model.Viewer{UserID: v.UserID}, nil
}

// totalUnread answers Viewer.totalUnread: the sum over the viewer's conversations.
func totalUnread(ctx context.Context) (int64, error) {
	list, err := loadersFrom(ctx).viewerConversations(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, st := range list {
		n += st.Unread()
	}
	return n, nil
}

// conversationPage answers Viewer.conversations: newest activity first, cursor-paged.
func conversationPage(ctx context.Context, first *int, after *string) (*model.ConversationConnection, error) {
	n, err := pageSize("first", first, defaultConversationPage, maxConversationPage)
	if err != nil {
		return nil, err
	}
	cursor, err := parseAfter(after)
	if err != nil {
		return nil, err
	}
	list, err := loadersFrom(ctx).viewerConversations(ctx)
	if err != nil {
		return nil, err
	}
	p := pageOf(list, n, cursor)
	return &model.ConversationConnection{Nodes: p.nodes,
		PageInfo: &model.PageInfo{EndCursor: p.endCursor, HasNextPage: p.hasMore}}, nil
}

// conversationListPage is one page of a conversation list in activity order.
type conversationListPage struct {
	nodes     []*model.Conversation
	endCursor *string
	hasMore   bool
}

// listCursor is a parsed after argument: the place of the previous page's last conversation
// in the order (activity time, ID), so a page stays correct when conversations before it move.
type listCursor struct {
	set  bool
	time int64
	id   string
}

// parseAfter parses an after argument (nil: the first page).
func parseAfter(after *string) (listCursor, error) {
	if after == nil {
		return listCursor{}, nil
	}
	t, id, err := decodeCursor(*after)
	return listCursor{set: true, time: t, id: id}, err
}

// pageOf cuts the page of n conversations after the cursor out of list (newest activity
// first).
func pageOf(list []im.SeqState, n int, after listCursor) conversationListPage {
	start := 0
	for after.set && start < len(list) && !isAfter(list[start], after.time, after.id) {
		start++
	}
	end := min(start+n, len(list))
	p := conversationListPage{nodes: make([]*model.Conversation, 0, end-start), hasMore: end < len(list)}
	for _, st := range list[start:end] {
		p.nodes = append(p.nodes, &model.Conversation{ID: st.ConversationID})
	}
	if end > start {
		c := encodeCursor(list[end-1])
		p.endCursor = &c
	}
	return p
}

// isAfter reports whether st comes after the cursor position in the list's order.
func isAfter(st im.SeqState, afterTime int64, afterID string) bool {
	if st.LastTime != afterTime {
		return st.LastTime < afterTime
	}
	return st.ConversationID > afterID
}

func encodeCursor(st im.SeqState) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(st.LastTime, 10) + "|" + st.ConversationID))
}

func decodeCursor(c string) (int64, string, error) {
	bad := im.Errorf(im.EINVALID, "after is not a cursor this server gave out")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	t, id, ok := strings.Cut(string(raw), "|")
	if !ok {
		return 0, "", bad
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, "", bad
	}
	return ts, id, nil
}
