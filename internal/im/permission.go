package im

// IsGroupManager reports whether a role may act on other members' messages.
func IsGroupManager(role int32) bool { return role == RoleOwner || role == RoleAdmin }

// CanActOnMessage decides whether actor may revoke a message, or delete it for everyone: the
// sender always may; in a group its owner and admins may too. actorRole is the actor's group
// role (0 outside groups).
func CanActOnMessage(kind ConversationKind, actor string, actorRole int32, sender string) bool {
	if actor == sender {
		return true
	}
	return (kind == GroupChat || kind == GroupNotification) && IsGroupManager(actorRole)
}

// CanClearForEveryone decides whether actor may clear a conversation's history for everyone:
// either member of a single chat, a group's owner or admins. Notification conversations have
// one reader, who clears them for themselves.
func CanClearForEveryone(kind ConversationKind, actorRole int32) bool {
	switch kind {
	case SingleChat:
		return true
	case GroupChat:
		return IsGroupManager(actorRole)
	}
	return false
}

// CanSend decides whether a sender may send m: anyone may send a chat message (to a
// conversation they belong to, which is checked apart); a notification is a system message,
// and only an admin may send one.
func CanSend(m *Message, admin bool) bool { return admin || IsNotNotification(m) }
