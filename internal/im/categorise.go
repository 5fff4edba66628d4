package im

// Option keys in Message.Options: OpenIM's own (openimsdk/protocol constant.go, IsHistory,
// IsNotNotification, IsSendMsg), so that a message exported from OpenIM is categorised here as
// OpenIM categorised it. An absent key means true, as in OpenIM's pkg/msgprocessor/options.go
// (Options.Is): a message with no options is a stored chat message.
const (
	OptionHistory         = "history"
	OptionNotNotification = "isNotNotification"
	OptionSendMsg         = "isSendMsg"
)

func option(m *Message, key string) bool {
	v, ok := m.Options[key]
	return !ok || v
}

// IsHistory reports whether the message is persisted. Transient messages (typing, call
// signalling) get no seq and are only published.
func IsHistory(m *Message) bool { return option(m, OptionHistory) }

// IsNotNotification reports whether the message is a chat message rather than a system
// notification.
func IsNotNotification(m *Message) bool { return option(m, OptionNotNotification) }

// IsSendMsg reports whether a notification should also appear as a message in the chat
// conversation. Only meaningful for notifications.
func IsSendMsg(m *Message) bool { return option(m, OptionSendMsg) }

// Placement says where one incoming message goes: into which conversation, and whether it is
// stored (and so gets a seq) or only published.
type Placement struct {
	ConversationID string
	Message        *Message
	Stored         bool
}

// ChatConversationID returns the chat conversation a message belongs to: the group's when
// GroupID is set, otherwise the single chat of sender and receiver.
func ChatConversationID(m *Message) (string, error) {
	if err := ValidateID("sender ID", m.SendID); err != nil {
		return "", err
	}
	switch {
	case m.GroupID != "" && m.RecvID != "":
		return "", Errorf(EINVALID, "a message goes to a user (recvID) or a group (groupID), not both")
	case m.GroupID != "":
		return GroupConversationID(m.GroupID)
	case m.RecvID != "":
		return SingleConversationID(m.SendID, m.RecvID)
	}
	return "", Errorf(EINVALID, "a message needs a recvID or a groupID")
}

// NotificationConversationID returns the notification conversation a notification is stored in.
func NotificationConversationID(m *Message) (string, error) {
	if err := ValidateID("sender ID", m.SendID); err != nil {
		return "", err
	}
	switch {
	case m.GroupID != "" && m.RecvID != "":
		return "", Errorf(EINVALID, "a notification goes to a user (recvID) or a group (groupID), not both")
	case m.GroupID != "":
		return GroupNotificationConversationID(m.GroupID)
	case m.RecvID != "":
		return UserNotificationConversationID(m.RecvID)
	}
	return "", Errorf(EINVALID, "a notification needs a recvID or a groupID")
}

// Categorise decides where an incoming message goes. IsNotNotification splits chat messages
// (chat conversation) from notifications (notification conversation); within each line,
// IsHistory decides between stored and published only. A notification with IsSendMsg also
// yields a clone stored as an ordinary chat message in the chat conversation, so that it shows
// up in the conversation's history; the clone carries default options.
func Categorise(m *Message) ([]Placement, error) {
	if IsNotNotification(m) {
		conv, err := ChatConversationID(m)
		if err != nil {
			return nil, err
		}
		return []Placement{{ConversationID: conv, Message: m, Stored: IsHistory(m)}}, nil
	}
	conv, err := NotificationConversationID(m)
	if err != nil {
		return nil, err
	}
	out := []Placement{{ConversationID: conv, Message: m, Stored: IsHistory(m)}}
	if IsSendMsg(m) {
		chat, err := ChatConversationID(m)
		if err != nil {
			return nil, err
		}
		clone := *m
		clone.Options = nil
		clone.AtUserIDList = append([]string(nil), m.AtUserIDList...)
		if m.OfflinePush != nil {
			p := *m.OfflinePush
			clone.OfflinePush = &p
		}
		out = append(out, Placement{ConversationID: chat, Message: &clone, Stored: true})
	}
	return out, nil
}
