package openim_test

import (
	"testing"

	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// Who may read what comes from OpenIM's conversation and group_member records, never from the
// user IDs inside a conversation ID.
func TestCanReadFollowsOpenIMsRecords(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	text := openimtest.TextContent("hi")
	d.Send(openimtest.SingleConversationID("a", "b"), openimtest.Single("a", "b", openimtest.ContentText, text))
	// A user whose ID is a group's ID, with a chat of their own.
	d.Send(openimtest.SingleConversationID("team", "x"), openimtest.Single("team", "x", openimtest.ContentText, text))
	// User IDs with underscores, as OpenIM allows.
	d.Send(openimtest.SingleConversationID("u_1", "v"), openimtest.Single("u_1", "v", openimtest.ContentText, text))
	for _, m := range []string{"a", "c", "e"} {
		d.AddGroupMember("team", m, openimtest.RoleMember)
	}
	d.Send("sg_team", openimtest.Group("a", "team", openimtest.ContentText, text)) // creates a, c, e's documents
	d.QuitGroup("team", "e")                                                       // e keeps the document, capped
	d.AddGroupMember("team", "m", openimtest.RoleMember)                           // joined, document not (yet) created
	s := d.open(openim.Options{})

	for _, tc := range []struct {
		user, conv string
		want       bool
	}{
		{"a", "si_a_b", true}, {"b", "si_a_b", true}, {"c", "si_a_b", false},
		{"a", "n_a_b", true}, {"c", "n_a_b", false},
		{"a", "n_a_a", true}, {"b", "n_a_a", false},
		{"a", "sg_team", true}, {"c", "sg_team", true}, {"b", "sg_team", false},
		{"a", "n_team", true}, {"b", "n_team", false},
		{"e", "sg_team", true}, {"e", "n_team", true}, // left: reads what they may (States caps it)
		{"m", "sg_team", true}, {"m", "n_team", false}, // member without a document yet
		{"team", "si_team_x", true}, {"team", "n_team_x", true}, {"team", "n_team_team", true},
		{"team", "sg_team", false}, {"team", "n_team", false}, // same ID as the group, not a member
		{"u_1", "si_u_1_v", true}, {"v", "si_u_1_v", true}, {"u", "si_u_1_v", false}, {"1_v", "si_u_1_v", false},
		{"u_1", "n_u_1_v", true}, {"u", "n_u_1_v", false},
		{"a", "g_team", true}, {"b", "g_team", false}, {"a", "sn_a_b", false}, // g_: the legacy group ID
	} {
		got, err := s.CanRead(ctx, tc.user, []string{tc.conv})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != tc.want {
			t.Errorf("CanRead(%s, %s) = %v, want %v", tc.user, tc.conv, got[0], tc.want)
		}
	}

	d.cmds.Reset()
	got, err := s.CanRead(ctx, "a", []string{"si_a_b", "n_a_b", "sg_team", "n_team", "sg_other", "g_other", "si_b_c", "n_a_a"})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, true, false, false, false, true} // g_other: a is no member
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("batch answer %d: %v, want %v", i, got[i], want[i])
		}
	}
	if c, g := d.cmds.Count("conversation", "find"), d.cmds.Count("group_member", "find"); c != 1 || g != 1 {
		t.Errorf("a batch of 8 cost %d conversation and %d group_member queries, want 1 and 1", c, g)
	}
}
