package gateway_test

import (
	"testing"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

const (
	revokeMutation = `mutation($c: ID!, $s: Int64!) { revokeMessage(conversationID: $c, seq: $s) { seq status content revoke { userID role } } }`
	deleteMutation = `mutation($c: ID!, $s: [Int64!]!, $all: Boolean) { deleteMessages(conversationID: $c, seqs: $s, forEveryone: $all) { seq status content } }`
	clearMutation  = `mutation($c: ID!, $all: Boolean) { clearConversation(conversationID: $c, forEveryone: $all) { maxSeq minSeq unreadCount } }`
	groupMutation  = `mutation($g: ID!, $m: [GroupMemberInput!]!) { upsertGroup(groupID: $g, members: $m) { id members { userID role } } }`
)

// Ensure revoke follows the rules: in a single chat only the sender; in a group also the
// owner and admins; revoking twice changes nothing; content is withheld from everyone.
func TestRevokeMessage(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob, carol := g.Token("alice"), g.Token("bob"), g.Token("carol")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "oops"})
	if code := g.ErrorCode(bob, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 1}); code != "FORBIDDEN" {
		t.Errorf("receiver revoking: %q, want FORBIDDEN", code)
	}
	var out struct{ RevokeMessage gatewaytest.Message }
	g.Query(alice, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 1}, &out)
	if out.RevokeMessage.Status != "REVOKED" || out.RevokeMessage.Content != nil {
		t.Fatalf("revoked: %+v", out.RevokeMessage)
	}
	g.Query(alice, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 1}, &out) // again: a no-op
	if got := g.Statuses(bob, "si_alice_bob", 1); len(got) != 1 || got[0] != "REVOKED" {
		t.Errorf("bob sees %v", got)
	}
	if code := g.ErrorCode(alice, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 9}); code != "NOT_FOUND" {
		t.Errorf("revoking a seq beyond maxSeq: %q, want NOT_FOUND", code)
	}

	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "alice", "role": "OWNER"}, {"userID": "bob", "role": "ADMIN"}, {"userID": "carol"}, {"userID": "dave"}}}, &struct{}{})
	g.SendGQL(carol, map[string]any{"groupID": "team", "contentType": 101, "content": "c1"})
	g.SendGQL(carol, map[string]any{"groupID": "team", "contentType": 101, "content": "c2"})
	if code := g.ErrorCode(g.Token("dave"), revokeMutation, map[string]any{"c": "sg_team", "s": 1}); code != "FORBIDDEN" {
		t.Errorf("a plain member revoking another's message: %q, want FORBIDDEN", code)
	}
	g.Query(bob, revokeMutation, map[string]any{"c": "sg_team", "s": 1}, &out)
	if out.RevokeMessage.Status != "REVOKED" || out.RevokeMessage.Revoke == nil {
		t.Errorf("admin revoke: %+v", out.RevokeMessage)
	}
	g.Query(alice, revokeMutation, map[string]any{"c": "sg_team", "s": 2}, &out)
	if got := g.Statuses(carol, "sg_team", 1, 2); len(got) != 2 || got[0] != "REVOKED" || got[1] != "REVOKED" {
		t.Errorf("carol sees %v", got)
	}
}

// Ensure delete for me hides messages from the deleter only, and delete for everyone is the
// sender's (or a group manager's) and hides them from all.
func TestDeleteMessages(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	}
	var out struct{ DeleteMessages []gatewaytest.Message }
	g.Query(bob, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{1}}, &out)
	if len(out.DeleteMessages) != 1 || out.DeleteMessages[0].Status != "DELETED" {
		t.Fatalf("delete for me: %+v", out.DeleteMessages)
	}
	if got := g.Statuses(bob, "si_alice_bob", 1, 2); got[0] != "DELETED" || got[1] != "OK" {
		t.Errorf("bob sees %v", got)
	}
	if got := g.Statuses(alice, "si_alice_bob", 1); got[0] != "OK" {
		t.Errorf("alice sees %v after bob deleted for himself", got)
	}
	if code := g.ErrorCode(bob, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{2}, "all": true}); code != "FORBIDDEN" {
		t.Errorf("receiver deleting for everyone: %q, want FORBIDDEN", code)
	}
	g.Query(alice, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{2, 3}, "all": true}, &out)
	for _, tok := range []string{alice, bob} {
		if got := g.Statuses(tok, "si_alice_bob", 2, 3); got[0] != "DELETED" || got[1] != "DELETED" {
			t.Errorf("after delete for everyone: %v", got)
		}
	}
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 3 {
		t.Errorf("deleting must not lower maxSeq: %+v", c)
	}
}

// Ensure clearing for me zeroes only my unread count and hides history up to now; clearing for
// everyone needs a group manager and moves the conversation's minSeq.
func TestClearConversation(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	}
	var out struct{ ClearConversation gatewaytest.Conversation }
	g.Query(bob, clearMutation, map[string]any{"c": "si_alice_bob"}, &out)
	if c := out.ClearConversation; c.UnreadCount != 0 || c.MinSeq != 4 || c.MaxSeq != 3 {
		t.Fatalf("after clear for me: %+v", c)
	}
	// What bob cleared is gone for him: asking for it says so, and where his history starts.
	r := g.Post(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3}})
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "HISTORY_UNAVAILABLE" || r.Errors[0].Extensions["minSeq"] != float64(4) {
		t.Errorf("bob reading what he cleared: %+v %s", r.Errors, r.Data)
	}
	if got := g.Statuses(alice, "si_alice_bob", 1, 2, 3); len(got) != 3 {
		t.Errorf("alice lost history: %v", got)
	}
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "new"})
	if c := g.Conversation(bob, "si_alice_bob"); c.UnreadCount != 1 {
		t.Errorf("a new message after clearing: %+v", c)
	}

	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}}}, &struct{}{})
	g.SendGQL(alice, map[string]any{"groupID": "team", "contentType": 101, "content": "g1"})
	if code := g.ErrorCode(bob, clearMutation, map[string]any{"c": "sg_team", "all": true}); code != "FORBIDDEN" {
		t.Errorf("a member clearing a group for everyone: %q, want FORBIDDEN", code)
	}
	g.Query(alice, clearMutation, map[string]any{"c": "sg_team", "all": true}, &out)
	if c := g.Conversation(bob, "sg_team"); c.MinSeq != 2 || c.UnreadCount != 0 {
		t.Errorf("bob after the owner cleared for everyone: %+v", c)
	}
}
