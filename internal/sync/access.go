package sync

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Memberships reports, for each conversation, whether userID belongs to it: single chats by
// their ID, a user's notification conversation by its owner, groups (and their notification
// conversations) by the member list in MongoDB, read in one query for all groups.
func (l *Ledger) Memberships(ctx context.Context, userID string, convs []im.Conversation) ([]bool, error) {
	out := make([]bool, len(convs))
	var groups []string
	for i, c := range convs {
		switch c.Kind {
		case im.SingleChat:
			out[i] = c.Peer(userID) != ""
		case im.UserNotification:
			out[i] = c.UserIDs[0] == userID
		case im.GroupChat, im.GroupNotification:
			groups = append(groups, c.GroupID)
		}
	}
	if len(groups) == 0 {
		return out, nil
	}
	members, err := l.store.FindGroupMemberships(ctx, userID, groups)
	if err != nil {
		return nil, err
	}
	for i, c := range convs {
		if c.Kind == im.GroupChat || c.Kind == im.GroupNotification {
			_, out[i] = members[c.GroupID]
		}
	}
	return out, nil
}

// ParseConversationID checks a conversation ID by the rules of the conversations the ledger
// keeps, msggate's own (im.ParseConversationID).
func (l *Ledger) ParseConversationID(id string) (im.Conversation, error) {
	return im.ParseConversationID(id)
}

// CanRead reports, aligned with conversationIDs, whether userID may read each conversation
// (Memberships, for IDs not yet parsed). A malformed ID is EINVALID.
func (l *Ledger) CanRead(ctx context.Context, userID string, conversationIDs []string) ([]bool, error) {
	convs := make([]im.Conversation, len(conversationIDs))
	for i, id := range conversationIDs {
		c, err := im.ParseConversationID(id)
		if err != nil {
			return nil, err
		}
		convs[i] = c
	}
	return l.Memberships(ctx, userID, convs)
}
