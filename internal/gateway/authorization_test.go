package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure every query and mutation answers members with data and everyone else with FORBIDDEN
// or UNAUTHENTICATED, and that refused requests change nothing.
func TestAuthorizationMatrix(t *testing.T) {
	g := gatewaytest.Start(t)
	admin := g.Admin()
	members := func(m ...map[string]any) map[string]any { return map[string]any{"g": "team", "m": m} }
	g.Query(admin, groupMutation, members(
		map[string]any{"userID": "alice", "role": "OWNER"}, map[string]any{"userID": "bob"}, map[string]any{"userID": "gone"}), &struct{}{})
	alice, bob, gone := g.Token("alice"), g.Token("bob"), g.Token("gone")
	g.SendGQL(alice, map[string]any{"groupID": "team", "contentType": 101, "content": "a1"})
	g.SendGQL(bob, map[string]any{"groupID": "team", "contentType": 101, "content": "b2"})
	g.Query(admin, groupMutation, members(map[string]any{"userID": "alice", "role": "OWNER"}, map[string]any{"userID": "bob"}), &struct{}{})

	expired, _ := auth.Issue(g.Secret, "bob", false, time.Hour, time.Now().Add(-2*time.Hour))
	forged, _ := auth.Issue([]byte("not-the-gateway-secret-0123456789"), "bob", false, time.Hour, time.Now())
	type op struct {
		name, query string
		vars        map[string]any
	}
	conv := "sg_team"
	ops := []op{
		{"conversation", gatewaytest.ConversationQuery, map[string]any{"id": conv}},
		{"messages", gatewaytest.MessagesQuery, map[string]any{"c": conv, "s": []int64{1, 2}}},
		{"history", `query($id: ID!) { conversation(id: $id) { history { messages { seq } } } }`, map[string]any{"id": conv}},
		{"sendMessage", gatewaytest.SendMutation, map[string]any{"in": map[string]any{"groupID": "team", "contentType": 101, "content": "x"}}},
		{"markConversationRead", `mutation($c: ID!) { markConversationRead(conversationID: $c) { readSeq } }`, map[string]any{"c": conv}},
		{"revokeMessage", revokeMutation, map[string]any{"c": conv, "s": 2}},
		{"deleteMessages", deleteMutation, map[string]any{"c": conv, "s": []int64{1}}},
		{"clearConversation", clearMutation, map[string]any{"c": conv}},
	}
	refused := []struct {
		who, token, code string
	}{
		{"non-member", g.Token("eve"), "FORBIDDEN"},
		{"admin, not a member", admin, "FORBIDDEN"},
		{"removed member", gone, "FORBIDDEN"},
		{"no token", "", "UNAUTHENTICATED"},
		{"expired token", expired, "UNAUTHENTICATED"},
		{"wrong signature", forged, "UNAUTHENTICATED"},
	}
	snapshot := func() string {
		var out struct {
			Conversation gatewaytest.Conversation
			Messages     []gatewaytest.Message
		}
		g.Query(alice, `query { conversation(id: "sg_team") { maxSeq minSeq readSeq unreadCount }
			messages(conversationID: "sg_team", seqs: [1, 2]) { seq status content } }`, nil, &out)
		var bobView struct{ Conversation gatewaytest.Conversation }
		g.Query(bob, gatewaytest.ConversationQuery, map[string]any{"id": conv}, &bobView)
		b, _ := json.Marshal([]any{out, bobView})
		return string(b)
	}
	before := snapshot()
	for _, p := range refused {
		for _, o := range ops {
			if code := g.ErrorCode(p.token, o.query, o.vars); code != p.code {
				t.Errorf("%s, %s: code %q, want %q", p.who, o.name, code, p.code)
			}
		}
		for _, q := range []op{
			{"upsertGroup", groupMutation, members(map[string]any{"userID": "eve", "role": "OWNER"})},
		} {
			want := p.code
			if p.token == admin {
				continue // the admin may manage groups: checked below
			}
			if code := g.ErrorCode(p.token, q.query, q.vars); code != want {
				t.Errorf("%s, %s: code %q, want %q", p.who, q.name, code, want)
			}
		}
		if p.code == "UNAUTHENTICATED" {
			if code := g.ErrorCode(p.token, `{ viewer { userID } }`, nil); code != "UNAUTHENTICATED" {
				t.Errorf("%s, viewer: code %q", p.who, code)
			}
		}
	}
	if code := g.ErrorCode(bob, groupMutation, members(map[string]any{"userID": "bob", "role": "OWNER"})); code != "FORBIDDEN" {
		t.Errorf("member, upsertGroup: code %q, want FORBIDDEN", code)
	}
	if after := snapshot(); after != before {
		t.Fatalf("refused requests changed state:\nbefore %s\nafter  %s", before, after)
	}

	// The member gets data for every operation (revoking their own message).
	for _, o := range ops {
		r := g.Post(bob, o.query, o.vars)
		if len(r.Errors) > 0 || string(r.Data) == "null" {
			t.Errorf("member, %s: %+v", o.name, r.Errors)
		}
	}
	var v gatewaytest.Viewer
	g.Query(g.Token("eve"), gatewaytest.ViewerQuery, nil, &v)
	if v.Viewer.UserID != "eve" || len(v.Viewer.Conversations.Nodes) != 0 {
		t.Errorf("a non-member's own viewer: %+v", v.Viewer)
	}
	g.Query(gone, gatewaytest.ViewerQuery, nil, &v)
	for _, c := range v.Viewer.Conversations.Nodes {
		if c.ID == conv {
			t.Errorf("a removed member still lists %s", conv)
		}
	}
}
