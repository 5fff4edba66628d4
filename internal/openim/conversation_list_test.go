package openim_test

import (
	"testing"

	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// A user's list is their conversation documents with messages, newest activity first.
func TestUserConversationsNewestActivityFirst(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	text := openimtest.TextContent("hi")
	d.Send("si_a_d", openimtest.Single("d", "a", openimtest.ContentText, text))
	d.Send("si_a_b", openimtest.Single("b", "a", openimtest.ContentText, text))
	d.AddGroupMember("team", "a", openimtest.RoleOwner)
	d.Send("sg_team", openimtest.Group("a", "team", openimtest.ContentText, text), openimtest.Group("a", "team", openimtest.ContentText, text))
	d.Send("si_a_c", openimtest.Single("c", "a", openimtest.ContentText, text))
	d.Send("si_a_b", openimtest.Single("b", "a", openimtest.ContentText, text), openimtest.Single("b", "a", openimtest.ContentText, text))
	d.CreateConversation(openimtest.Conversation{OwnerUserID: "a", ConversationID: "si_a_z", ConversationType: openimtest.SingleChatType, UserID: "z"})
	d.Send("si_b_c", openimtest.Single("b", "c", openimtest.ContentText, text)) // not a's
	d.LoseSeqCache("si_a_d")                                                    // activity from its last message then
	d.SetReadSeq("si_a_b", "a", 1)

	s := d.open(openim.Options{})
	list, err := s.UserConversations(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range list {
		ids = append(ids, st.ConversationID)
	}
	want := []string{"si_a_b", "si_a_c", "sg_team", "si_a_d"}
	if len(ids) != len(want) {
		t.Fatalf("list %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("list %v, want %v", ids, want)
		}
	}
	if list[0].MaxSeq != 3 || list[0].Unread() != 2 || list[2].MaxSeq != 2 || list[2].Unread() != 0 {
		t.Errorf("states: %+v", list)
	}
	if c, trips := d.cmds.Count("conversation", "find"), len(d.trips.Take()); c != 1 || trips != 1 {
		t.Errorf("the list cost %d conversation queries and %d Redis round trips, want 1 and 1", c, trips)
	}

	if list, err := s.UserConversations(ctx, "nobody"); err != nil || len(list) != 0 {
		t.Errorf("a user without conversations: %v, %v", list, err)
	}
}
