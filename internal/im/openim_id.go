package im

import "strings"

// OpenIM's IDs follow other rules than msggate's own (ValidateID, ParseConversationID). A
// gateway serving an OpenIM deployment (OpenIM mode) applies these instead; which set applies
// is the store's to say, never the GraphQL layer's.
//
// User IDs: OpenIM's registration (internal/rpc/user/user.go UserRegister) refuses only empty
// IDs and IDs containing ':'. Conversation IDs (pkg/msgprocessor/conversation.go
// GetConversationIDBySessionType, GetConversationIDByMsg) are a prefix and one or two user or
// group IDs joined by '_': si_ single chat, g_ legacy group, sg_ group ("super group"), sn_
// notification chat, n_ notification conversation. Since user IDs may contain '_', the part
// after the prefix cannot be split back into users, and OpenIM never does: who may read a
// conversation comes from OpenIM's records, not from its ID.

// MaxOpenIMIDBytes bounds the OpenIM user and group IDs a client may name. OpenIM sets no
// limit of its own; the bound only keeps keys and queries built from client input small.
const MaxOpenIMIDBytes = 1024

// openIMPrefixes are OpenIM's conversation ID prefixes and the kind each gives. sg_ comes
// before g_ and sn_ before n_ only for readability: no prefix is a prefix of another.
var openIMPrefixes = []struct {
	prefix string
	kind   ConversationKind
}{
	{"si_", SingleChat},
	{"sg_", GroupChat},
	{"g_", GroupChat},
	{"sn_", Notification},
	{"n_", Notification},
}

// OpenIMConversationPrefixes returns OpenIM's conversation ID prefixes.
func OpenIMConversationPrefixes() []string {
	out := make([]string, len(openIMPrefixes))
	for i, p := range openIMPrefixes {
		out[i] = p.prefix
	}
	return out
}

// ValidateOpenIMUserID checks an OpenIM user ID: not empty, no ':', at most MaxOpenIMIDBytes.
func ValidateOpenIMUserID(userID string) error {
	switch {
	case userID == "":
		return Errorf(EINVALID, "user ID must not be empty")
	case strings.Contains(userID, ":"):
		return Errorf(EINVALID, "user ID must not contain ':'")
	case len(userID) > MaxOpenIMIDBytes:
		return Errorf(EINVALID, "user ID is longer than %d bytes", MaxOpenIMIDBytes)
	}
	return nil
}

// ParseOpenIMConversationID checks an OpenIM conversation ID and gives its kind from its
// prefix. A group conversation (sg_, g_) has its GroupID, which OpenIM builds by prefixing
// the group ID; no other part of the ID is read: UserIDs stays nil.
func ParseOpenIMConversationID(id string) (Conversation, error) {
	if len(id) > 2*MaxOpenIMIDBytes+8 {
		return Conversation{}, Errorf(EINVALID, "conversation ID is too long")
	}
	for _, p := range openIMPrefixes {
		rest, ok := strings.CutPrefix(id, p.prefix)
		if !ok || rest == "" {
			continue
		}
		c := Conversation{ID: id, Kind: p.kind}
		if p.kind == GroupChat {
			c.GroupID = rest
		}
		return c, nil
	}
	return Conversation{}, Errorf(EINVALID, "conversation ID %q is malformed: OpenIM's IDs start with si_, sg_, g_, sn_ or n_", truncate(id, 80))
}
