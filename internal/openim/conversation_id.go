package openim

import (
	"strings"

	"github.com/msggate/msggate/internal/im"
)

// OpenIM's conversation ID prefixes (pkg/msgprocessor/conversation.go
// GetConversationIDBySessionType and GetConversationIDByMsg): si_ single chat, g_ legacy group,
// sg_ group ("super group"), sn_ server notification chat, n_ notification conversations. The
// rest of an ID is made of user or group IDs joined by '_', and OpenIM's user IDs may contain
// '_' themselves, so the rest is opaque: it is never split back into users.
var chatPrefixes = []string{"si_", "sg_", "g_", "sn_", "n_"}

// maxIDBytes bounds the IDs a client may name. OpenIM sets no length limit of its own; the
// bound only keeps keys and queries built from client input small.
const maxIDBytes = 1024

// validUserID checks an OpenIM user ID: registration (internal/rpc/user/user.go
// UserRegister) refuses only empty IDs and IDs containing ':'.
func validUserID(userID string) error {
	switch {
	case userID == "":
		return im.Errorf(im.EINVALID, "user ID must not be empty")
	case strings.Contains(userID, ":"):
		return im.Errorf(im.EINVALID, "user ID must not contain ':'")
	case len(userID) > maxIDBytes:
		return im.Errorf(im.EINVALID, "user ID is longer than %d bytes", maxIDBytes)
	}
	return nil
}

// validConversationID checks that id has one of OpenIM's prefixes and something after it.
func validConversationID(id string) error {
	if len(id) > 2*maxIDBytes+8 {
		return im.Errorf(im.EINVALID, "conversation ID is too long")
	}
	for _, p := range chatPrefixes {
		if strings.HasPrefix(id, p) && len(id) > len(p) {
			return nil
		}
	}
	return im.Errorf(im.EINVALID, "conversation ID %q is malformed: OpenIM's IDs start with si_, sg_, g_, sn_ or n_", clip(id))
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
	for _, p := range []string{"sg_", "g_"} {
		if g, ok := strings.CutPrefix(conversationID, p); ok && g != "" {
			return g, true
		}
	}
	return "", false
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
	out := make([]string, 0, len(chatPrefixes))
	for _, p := range chatPrefixes {
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
