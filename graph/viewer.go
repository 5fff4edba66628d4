package graph

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
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

// conversationPage answers Viewer.conversations: newest activity first, cursor-paged. The
// cursor names the last conversation of the previous page by its place in the order
// (activity time, ID), so a page stays correct when conversations before it move.
func conversationPage(ctx context.Context, first *int, after *string) (*model.ConversationConnection, error) {
	n := defaultConversationPage
	if first != nil {
		n = *first
	}
	switch {
	case n > maxConversationPage:
		return nil, im.Errorf(im.ELIMIT, "first is at most %d, got %d", maxConversationPage, n)
	case n < 1:
		return nil, im.Errorf(im.EINVALID, "first must be at least 1")
	}
	var afterTime int64
	var afterID string
	if after != nil {
		var err error
		if afterTime, afterID, err = decodeCursor(*after); err != nil {
			return nil, err
		}
	}
	list, err := loadersFrom(ctx).viewerConversations(ctx)
	if err != nil {
		return nil, err
	}
	start := 0
	if after != nil {
		for start < len(list) && !isAfter(list[start], afterTime, afterID) {
			start++
		}
	}
	end := min(start+n, len(list))
	out := &model.ConversationConnection{Nodes: make([]*model.Conversation, 0, end-start), PageInfo: &model.PageInfo{}}
	for _, st := range list[start:end] {
		out.Nodes = append(out.Nodes, &model.Conversation{ID: st.ConversationID})
	}
	if end > start {
		c := encodeCursor(list[end-1])
		out.PageInfo.EndCursor = &c
	}
	out.PageInfo.HasNextPage = end < len(list)
	return out, nil
}

// isAfter reports whether st comes after the cursor position in the list's order.
func isAfter(st imsync.State, afterTime int64, afterID string) bool {
	if st.LastTime != afterTime {
		return st.LastTime < afterTime
	}
	return st.ConversationID > afterID
}

func encodeCursor(st imsync.State) string {
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
