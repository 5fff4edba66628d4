package im_test

import (
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure clearing for everyone is open to both members of a single chat and to a group's owner
// and admins, and to nobody else: not an ordinary member, not a non-member (role 0), not the
// reader of a notification conversation.
func TestCanClearForEveryone(t *testing.T) {
	for _, tc := range []struct {
		kind im.ConversationKind
		role int32
		want bool
	}{
		{im.SingleChat, 0, true},
		{im.GroupChat, im.RoleOwner, true},
		{im.GroupChat, im.RoleAdmin, true},
		{im.GroupChat, im.RoleMember, false},
		{im.GroupChat, 0, false},
		{im.GroupNotification, im.RoleOwner, false},
		{im.UserNotification, 0, false},
	} {
		if got := im.CanClearForEveryone(tc.kind, tc.role); got != tc.want {
			t.Errorf("kind %v, role %d: %v, want %v", tc.kind, tc.role, got, tc.want)
		}
	}
}

// Ensure only an admin may send a notification, while anyone may send a chat message, stored
// or transient.
func TestCanSend(t *testing.T) {
	chat := &im.Message{SendID: "alice", RecvID: "bob"}
	transient := &im.Message{SendID: "alice", RecvID: "bob", Options: map[string]bool{im.OptionHistory: false}}
	note := &im.Message{SendID: "alice", RecvID: "bob", Options: map[string]bool{im.OptionNotNotification: false}}
	for _, tc := range []struct {
		name  string
		m     *im.Message
		admin bool
		want  bool
	}{
		{"a user's chat message", chat, false, true},
		{"a user's transient chat message", transient, false, true},
		{"a user's notification", note, false, false},
		{"an admin's notification", note, true, true},
		{"an admin's chat message", chat, true, true},
	} {
		if got := im.CanSend(tc.m, tc.admin); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Ensure the sender may always act on their message, and others only as a group's manager.
func TestCanActOnMessage(t *testing.T) {
	for _, tc := range []struct {
		kind  im.ConversationKind
		actor string
		role  int32
		want  bool
	}{
		{im.SingleChat, "alice", 0, true},
		{im.SingleChat, "bob", 0, false},
		{im.GroupChat, "bob", im.RoleAdmin, true},
		{im.GroupChat, "bob", im.RoleMember, false},
		{im.GroupNotification, "bob", im.RoleOwner, true},
		{im.UserNotification, "bob", im.RoleOwner, false},
	} {
		if got := im.CanActOnMessage(tc.kind, tc.actor, tc.role, "alice"); got != tc.want {
			t.Errorf("kind %v, %s as %d: %v, want %v", tc.kind, tc.actor, tc.role, got, tc.want)
		}
	}
}
