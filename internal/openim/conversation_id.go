package openim

import (
	"strings"

	"github.com/msggate/msggate/internal/im"
)

// The rules of OpenIM's user and conversation IDs live in im (ValidateOpenIMUserID,
// ParseOpenIMConversationID): OpenIM's user IDs may contain '_', so the part of a conversation
// ID after its prefix is opaque and never split back into users.

func validUserID(userID string) error { return im.ValidateOpenIMUserID(userID) }

func validConversationID(id string) error {
	_, err := im.ParseOpenIMConversationID(id)
	return err
}

func validConversationIDs(ids []string) error {
	for _, id := range ids {
		if err := validConversationID(id); err != nil {
			return err
		}
	}
	return nil
}

// groupOf returns the group ID of a group conversation (sg_<group>, or the legacy g_<group>),
// which OpenIM builds by prefixing the group ID (GetConversationIDBySessionType).
func groupOf(conversationID string) (string, bool) {
	c, err := im.ParseOpenIMConversationID(conversationID)
	if err != nil || c.Kind != im.GroupChat {
		return "", false
	}
	return c.GroupID, true
}

// notificationOf is the notification conversation OpenIM pairs with a conversation
// (pkg/util/conversationutil GetNotificationConversationIDByConversationID): the part before
// the first '_' becomes "n". GetMaxSeq (internal/rpc/msg/sync_msg.go) lets a user sync the
// notification conversations of all their conversations this way.
func notificationOf(conversationID string) (string, bool) {
	_, rest, ok := strings.Cut(conversationID, "_")
	if !ok {
		return "", false
	}
	return "n_" + rest, true
}

// notificationSources lists the conversation IDs whose notification conversation is id (an
// n_ ID): every known prefix in front of the same rest.
func notificationSources(id string) []string {
	rest, ok := strings.CutPrefix(id, "n_")
	if !ok {
		return nil
	}
	prefixes := im.OpenIMConversationPrefixes()
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		out = append(out, p+rest)
	}
	return out
}

// selfNotification is the user's own notification conversation
// (conversationutil.GetSelfNotificationConversationID), which GetMaxSeq always adds.
func selfNotification(userID string) string { return "n_" + userID + "_" + userID }

func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "..."
}

// ParseConversationID checks a conversation ID by OpenIM's rules (im.ParseOpenIMConversationID),
// the rules of the deployment the Store reads. It says nothing of whether the conversation
// exists or who may read it: that is CanRead.
func (s *Store) ParseConversationID(id string) (im.Conversation, error) {
	return im.ParseOpenIMConversationID(id)
}
