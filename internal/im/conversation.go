package im

import "strings"

// ConversationKind says who a conversation belongs to, and so who may read it.
type ConversationKind int

const (
	// SingleChat is a conversation between two users: "si_<a>_<b>" with a < b.
	SingleChat ConversationKind = iota + 1
	// GroupChat is a group's conversation: "sg_<groupID>"; its readers are the group's members.
	GroupChat
	// UserNotification holds the system notifications of one user: "n_<userID>".
	UserNotification
	// GroupNotification holds a group's system notifications: "n_sg_<groupID>".
	GroupNotification
	// Notification holds system notifications whose reader the ID does not tell: OpenIM's
	// n_ and sn_ conversations (ParseOpenIMConversationID). Who may read one is for the store
	// to say.
	Notification
)

// IsGroup reports whether the kind's readers are a group's members: its changes are logged in
// the conversation's own event stream, once, rather than in every member's log.
func (k ConversationKind) IsGroup() bool { return k == GroupChat || k == GroupNotification }

func (k ConversationKind) String() string {
	switch k {
	case SingleChat:
		return "SINGLE"
	case GroupChat:
		return "GROUP"
	case UserNotification, GroupNotification, Notification:
		return "NOTIFICATION"
	}
	return "UNKNOWN"
}

// MaxIDLength bounds user and group IDs. Conversation IDs are built from at most two of them.
const MaxIDLength = 64

// ValidateID checks a user or group ID. IDs are 1..64 characters of letters, digits, '-', '.'
// and '@'. The underscore is excluded on purpose: it separates the parts of a conversation ID,
// and allowing it would make "si_a_b_c" ambiguous. ':' is excluded because it separates the
// conversation ID from the chunk index in a chunk document ID.
func ValidateID(what, id string) error {
	if id == "" {
		return Errorf(EINVALID, "%s must not be empty", what)
	}
	if len(id) > MaxIDLength {
		return Errorf(EINVALID, "%s is longer than %d characters", what, MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '@':
		default:
			return Errorf(EINVALID, "%s %q contains %q: only letters, digits, '-', '.' and '@' are allowed", what, id, c)
		}
	}
	return nil
}

// Conversation is a parsed conversation ID.
type Conversation struct {
	ID   string
	Kind ConversationKind
	// UserIDs holds the two members of a single chat (sorted) or the owner of a user
	// notification conversation; nil when the ID does not tell (OpenIM's IDs).
	UserIDs []string
	// GroupID is set for group chats and group notification conversations.
	GroupID string
}

// SingleConversationID returns the ID of the single chat between users a and b.
func SingleConversationID(a, b string) (string, error) {
	if err := ValidateID("user ID", a); err != nil {
		return "", err
	}
	if err := ValidateID("user ID", b); err != nil {
		return "", err
	}
	if a == b {
		return "", Errorf(EINVALID, "a single chat needs two different users")
	}
	if b < a {
		a, b = b, a
	}
	return "si_" + a + "_" + b, nil
}

// GroupConversationID returns the ID of a group's chat.
func GroupConversationID(groupID string) (string, error) {
	if err := ValidateID("group ID", groupID); err != nil {
		return "", err
	}
	return "sg_" + groupID, nil
}

// UserNotificationConversationID returns the ID of a user's notification conversation.
func UserNotificationConversationID(userID string) (string, error) {
	if err := ValidateID("user ID", userID); err != nil {
		return "", err
	}
	return "n_" + userID, nil
}

// GroupNotificationConversationID returns the ID of a group's notification conversation.
func GroupNotificationConversationID(groupID string) (string, error) {
	if err := ValidateID("group ID", groupID); err != nil {
		return "", err
	}
	return "n_sg_" + groupID, nil
}

// ParseConversationID parses and validates a conversation ID. Only the canonical form is
// accepted (a single chat's users sorted), so every conversation has exactly one ID.
func ParseConversationID(id string) (Conversation, error) {
	bad := func(why string) (Conversation, error) {
		return Conversation{}, Errorf(EINVALID, "conversation ID %q is malformed: %s", truncate(id, 80), why)
	}
	if len(id) > 2*MaxIDLength+4 {
		return bad("too long")
	}
	switch {
	case strings.HasPrefix(id, "si_"):
		a, b, ok := strings.Cut(id[len("si_"):], "_")
		if !ok {
			return bad("a single chat ID is si_<userA>_<userB>")
		}
		if ValidateID("user ID", a) != nil || ValidateID("user ID", b) != nil {
			return bad("a single chat ID is si_<userA>_<userB> with valid user IDs")
		}
		if a >= b {
			return bad("the two user IDs must differ and be sorted")
		}
		return Conversation{ID: id, Kind: SingleChat, UserIDs: []string{a, b}}, nil
	case strings.HasPrefix(id, "sg_"):
		g := id[len("sg_"):]
		if ValidateID("group ID", g) != nil {
			return bad("a group chat ID is sg_<groupID> with a valid group ID")
		}
		return Conversation{ID: id, Kind: GroupChat, GroupID: g}, nil
	case strings.HasPrefix(id, "n_sg_"):
		g := id[len("n_sg_"):]
		if ValidateID("group ID", g) != nil {
			return bad("a group notification ID is n_sg_<groupID> with a valid group ID")
		}
		return Conversation{ID: id, Kind: GroupNotification, GroupID: g}, nil
	case strings.HasPrefix(id, "n_"):
		u := id[len("n_"):]
		if ValidateID("user ID", u) != nil {
			return bad("a notification ID is n_<userID> with a valid user ID")
		}
		return Conversation{ID: id, Kind: UserNotification, UserIDs: []string{u}}, nil
	}
	return bad("it must start with si_, sg_ or n_")
}

// Peer returns the other member of a single chat, or "" for other kinds, a non-member, or an
// ID that does not name its members.
func (c Conversation) Peer(userID string) string {
	if c.Kind != SingleChat || len(c.UserIDs) != 2 {
		return ""
	}
	switch userID {
	case c.UserIDs[0]:
		return c.UserIDs[1]
	case c.UserIDs[1]:
		return c.UserIDs[0]
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
