package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

const groupPageQuery = `query($id: ID!) { conversation(id: $id) { history(limit: 100) { messages { seq content isRead } } } }`

// Ensure a warm history page of a group sends no MongoDB command, and costs the Redis round
// trips a single chat's warm page does; and that a non-member's refusal, warm, sends none
// either.
func TestWarmGroupPageSendsNoMongoDBCommand(t *testing.T) {
	// No relay in the background: every command counted is the pages'.
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.RelayInterval = time.Hour })
	if err := g.Ledger.SetGroup(context.Background(), "team", []im.GroupMember{
		{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleMember}, {UserID: "carol", Role: im.RoleMember}}); err != nil {
		t.Fatal(err)
	}
	g.Send("alice", "", "team", 150)
	g.Send("alice", "bob", "", 150)
	bob, eve := g.Token("bob"), g.Token("eve")

	page := func(conv string) {
		t.Helper()
		var out struct {
			Conversation struct {
				History struct{ Messages []gatewaytest.Message }
			}
		}
		g.Query(bob, groupPageQuery, map[string]any{"id": conv}, &out)
		if n := len(out.Conversation.History.Messages); n != 100 {
			t.Fatalf("%s: %d messages, want 100", conv, n)
		}
	}
	// warm reads conv's page until it is warm and once more, and returns the warm page's MongoDB
	// commands and Redis round trips.
	warm := func(conv string) (map[string]int, [][]string) {
		t.Helper()
		// The first read fills what the sends left out of Redis (the group's seq state, whose
		// fill moves its chunks version), the second keeps the chunks in memory.
		page(conv)
		page(conv)
		g.Mongo.Reset()
		g.RoundTrips.Take()
		page(conv)
		return g.Mongo.All(), g.RoundTrips.Take()
	}
	_, singleTrips := warm("si_alice_bob")
	groupMongo, groupTrips := warm("sg_team")
	if len(groupMongo) != 0 {
		t.Errorf("a warm group page sent %v to MongoDB, want nothing", groupMongo)
	}
	if len(groupTrips) != len(singleTrips) {
		t.Errorf("a warm group page made %d Redis round trips %v, a single chat's %d %v: want as many",
			len(groupTrips), groupTrips, len(singleTrips), singleTrips)
	}

	for range 2 {
		g.Mongo.Reset()
		if code := g.ErrorCode(eve, groupPageQuery, map[string]any{"id": "sg_team"}); code != "FORBIDDEN" {
			t.Fatalf("a non-member's page: %q, want FORBIDDEN", code)
		}
	}
	if got := g.Mongo.All(); len(got) != 0 {
		t.Errorf("a non-member's second refusal sent %v to MongoDB, want nothing", got)
	}
}

// Ensure a change of a group's members made through one instance is what the other instance
// answers on its next read, once the change is acknowledged: a removed member is refused at
// once, a member added again reads again, and a role given or taken decides what the member
// may do.
func TestGroupChangeOnOneInstanceIsSeenByTheOther(t *testing.T) {
	pair := gatewaytest.StartPair(t, nil)
	a, b := pair[0], pair[1]
	admin := a.Admin()
	setGroup := func(members ...map[string]any) {
		t.Helper()
		if r := a.Post(admin, groupMutation, map[string]any{"g": "team", "m": members}); len(r.Errors) > 0 {
			t.Fatalf("upsertGroup through A: %+v", r.Errors)
		}
	}
	owner := map[string]any{"userID": "alice", "role": "OWNER"}
	setGroup(owner, map[string]any{"userID": "bob"}, map[string]any{"userID": "carol"})
	alice, bob, carol := a.Token("alice"), a.Token("bob"), a.Token("carol")
	a.SendGQL(carol, map[string]any{"groupID": "team", "contentType": 101, "content": "c1"})
	a.SendGQL(carol, map[string]any{"groupID": "team", "contentType": 101, "content": "c2"})
	a.SendGQL(alice, map[string]any{"groupID": "team", "contentType": 101, "content": "a3"})
	// onB is the first error's code of bob's request on B, "" when it succeeded.
	onB := func(query string, vars map[string]any) string {
		t.Helper()
		r := b.Post(bob, query, vars)
		if len(r.Errors) == 0 {
			return ""
		}
		code, _ := r.Errors[0].Extensions["code"].(string)
		return code
	}
	readsOnB := func() string {
		t.Helper()
		return onB(groupPageQuery, map[string]any{"id": "sg_team"})
	}
	for range 2 { // the second read is warm on B
		if code := readsOnB(); code != "" {
			t.Fatalf("bob, a member, reading on B: %q", code)
		}
	}
	if code := onB(revokeMutation, map[string]any{"c": "sg_team", "s": 1}); code != "FORBIDDEN" {
		t.Fatalf("bob, a member, revoking carol's message on B: %q, want FORBIDDEN", code)
	}

	setGroup(owner, map[string]any{"userID": "carol"})
	if code := readsOnB(); code != "FORBIDDEN" {
		t.Errorf("bob, removed through A, reading on B: %q, want FORBIDDEN", code)
	}
	setGroup(owner, map[string]any{"userID": "bob", "role": "ADMIN"}, map[string]any{"userID": "carol"})
	if code := readsOnB(); code != "" {
		t.Errorf("bob, added again through A, reading on B: %q", code)
	}
	if code := onB(revokeMutation, map[string]any{"c": "sg_team", "s": 1}); code != "" {
		t.Errorf("bob, made admin through A, revoking carol's message on B: %q", code)
	}
	setGroup(owner, map[string]any{"userID": "bob"}, map[string]any{"userID": "carol"})
	if code := onB(revokeMutation, map[string]any{"c": "sg_team", "s": 2}); code != "FORBIDDEN" {
		t.Errorf("bob, no longer admin through A, revoking carol's message on B: %q, want FORBIDDEN", code)
	}
}
