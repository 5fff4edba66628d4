package im_test

import (
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure OpenIM's conversation IDs are accepted as the opaque strings they are, with their
// kind from the prefix, including the forms msggate's own rules refuse (user IDs with '_',
// self chats, g_ and sn_), and that nothing but a group's ID is read out of them.
func TestParseOpenIMConversationID(t *testing.T) {
	for id, want := range map[string]im.Conversation{
		"si_alice_bob":   {Kind: im.SingleChat},
		"si_u_u":         {Kind: im.SingleChat},
		"si_a_b_c_d":     {Kind: im.SingleChat},
		"sg_3456":        {Kind: im.GroupChat, GroupID: "3456"},
		"g_legacy_group": {Kind: im.GroupChat, GroupID: "legacy_group"},
		"sn_admin_bob":   {Kind: im.Notification},
		"n_alice_bob":    {Kind: im.Notification},
		"n_3456":         {Kind: im.Notification},
		"si_é_ü":         {Kind: im.SingleChat},
		"sg_" + "x:y":    {Kind: im.GroupChat, GroupID: "x:y"},
	} {
		c, err := im.ParseOpenIMConversationID(id)
		if err != nil || c.ID != id || c.Kind != want.Kind || c.GroupID != want.GroupID || c.UserIDs != nil {
			t.Errorf("ParseOpenIMConversationID(%q) = %+v, %v; want kind %v group %q", id, c, err, want.Kind, want.GroupID)
		}
		if c.Peer("alice") != "" {
			t.Errorf("%q: Peer read a user out of an OpenIM ID", id)
		}
	}
	for _, id := range []string{"", "si_", "sg_", "g_", "n_", "sn_", "x_a_b", "alice", "SI_a_b", "si_" + strings.Repeat("a", 2*im.MaxOpenIMIDBytes+8)} {
		if _, err := im.ParseOpenIMConversationID(id); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("ParseOpenIMConversationID(%.40q) err=%v, want EINVALID", id, err)
		}
	}
}

func TestValidateOpenIMUserID(t *testing.T) {
	for _, id := range []string{"alice", "a_b", "1234567", "é", "a b", "a.b@c"} {
		if err := im.ValidateOpenIMUserID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "a:b", strings.Repeat("u", im.MaxOpenIMIDBytes+1)} {
		if err := im.ValidateOpenIMUserID(id); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("%.40q: err=%v, want EINVALID", id, err)
		}
	}
}
