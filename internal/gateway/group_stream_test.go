package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/syncclient"
)

// groupOf makes a group of n members, m-0001 first (its owner).
func groupOf(t *testing.T, g *gatewaytest.Gateway, groupID string, n int) {
	t.Helper()
	members := make([]im.GroupMember, n)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("m-%04d", i+1), Role: im.RoleMember}
	}
	members[0].Role = im.RoleOwner
	if err := g.Ledger.SetGroup(context.Background(), groupID, members); err != nil {
		t.Fatal(err)
	}
}

// groupSendCost sends n messages to a group one by one and returns the Redis calls (scripts'
// calls included) and bytes of memory they cost, per message.
func groupSendCost(t *testing.T, g *gatewaytest.Gateway, groupID string, n int) (calls, bytes float64) {
	t.Helper()
	ctx := context.Background()
	g.Send("m-0001", "", groupID, 1) // the first send creates the group's stream and seq state
	before, err := g.Cache.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		g.Send("m-0001", "", groupID, 1)
	}
	after, err := g.Cache.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The ServerStats call itself is one of the calls counted.
	return float64(after.TotalCalls()-before.TotalCalls()-3) / float64(n), float64(after.UsedMemory-before.UsedMemory) / float64(n)
}

// Ensure a group message costs Redis the same whatever the group's size: it is logged once,
// in the group's stream, not in every member's log.
func TestGroupMessageCostDoesNotGrowWithMembers(t *testing.T) {
	g := gatewaytest.Start(t)
	groupOf(t, g, "small", 5)
	groupOf(t, g, "large", 300)
	const sends = 20
	smallCalls, smallBytes := groupSendCost(t, g, "small", sends)
	largeCalls, largeBytes := groupSendCost(t, g, "large", sends)
	t.Logf("per message: 5 members %.1f Redis calls, %.0f bytes; 300 members %.1f calls, %.0f bytes",
		smallCalls, smallBytes, largeCalls, largeBytes)
	if largeCalls > smallCalls+3 || largeCalls > 300 {
		t.Errorf("a message to 300 members costs %.1f Redis calls, to 5 members %.1f: the cost grows with members", largeCalls, smallCalls)
	}
	// An event in a member's log took about 650 bytes: 300 of them would be ~190 KiB.
	if largeBytes > 8<<10 {
		t.Errorf("a message to 300 members takes %.0f bytes of Redis memory (5 members: %.0f)", largeBytes, smallBytes)
	}
}

// Ensure devices follow group streams through membership changes while they are live: a
// member added mid-stream gets JOIN and then the group's messages, one removed gets LEAVE and
// loses the conversation, and every replica ends equal to the server's state.
func TestGroupStreamMembershipChanges(t *testing.T) {
	g := gatewaytest.Start(t)
	ctx := context.Background()
	set := func(ids ...string) {
		t.Helper()
		ms := make([]im.GroupMember, len(ids))
		for i, id := range ids {
			ms[i] = im.GroupMember{UserID: id, Role: im.RoleMember}
		}
		ms[0].Role = im.RoleOwner
		if err := g.Ledger.SetGroup(ctx, "crew", ms); err != nil {
			t.Fatal(err)
		}
	}
	set("ann", "ben", "cat")
	g.Send("ann", "", "crew", 3)
	g.Send("ann", "dan", "", 1) // dan has a conversation before he joins

	var mu sync.Mutex
	seen := map[string][]string{} // user: the JOIN and LEAVE events applied
	devices := map[string]*device{}
	for _, u := range []string{"ann", "ben", "dan"} {
		c, err := syncclient.New(g.URL, g.Token(u), syncclient.Options{ReconnectMin: 10 * time.Millisecond,
			OnApply: func(a syncclient.Applied) {
				if err := syncclient.CheckInvariants(a); err != nil {
					t.Error(err)
				}
				if a.Event.Type == syncclient.EventJoin || a.Event.Type == syncclient.EventLeave {
					mu.Lock()
					seen[u] = append(seen[u], a.Event.Type+" "+a.Event.ConversationID)
					mu.Unlock()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		d := &device{name: u, user: u, client: c}
		d.start()
		devices[u] = d
	}
	defer func() {
		for _, d := range devices {
			if err := d.stop(); err != nil {
				t.Error(err)
			}
		}
	}()
	gatewaytest.WaitFor(t, 20*time.Second, "three devices subscribe", func() bool { return g.Hub.Subscribers() == 3 })

	g.Send("ben", "", "crew", 2)
	set("ann", "cat", "dan") // ben leaves, dan joins
	g.Send("cat", "", "crew", 2)
	if _, _, err := g.Ledger.MarkRead(ctx, "dan", "sg_crew", nil); err != nil {
		t.Fatal(err)
	}
	g.Send("ann", "", "crew", 1)

	for _, u := range []string{"ann", "ben", "dan"} {
		want := serverReplica(t, g, g.Token(u))
		d := devices[u]
		deadline := time.Now().Add(20 * time.Second)
		for d.client.Pending() != 0 || syncclient.DiffHeld(d.client.Replica(), want) != "" {
			if time.Now().After(deadline) {
				t.Fatalf("%s's device did not converge: pending %d\n%s", u, d.client.Pending(), syncclient.DiffHeld(d.client.Replica(), want))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, ok := devices["ben"].client.Replica().Conversations["sg_crew"]; ok {
		t.Error("ben left the group, and his replica still holds its conversation")
	}
	if got := devices["dan"].client.Replica().Conversations["sg_crew"]; got.MaxSeq != 8 || got.UnreadCount != 1 {
		t.Errorf("dan's replica of the group after joining: %+v, want max seq 8 and 1 unread", got.Counters)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen["ben"]) != "[LEAVE sg_crew LEAVE n_sg_crew]" && fmt.Sprint(seen["ben"]) != "[LEAVE n_sg_crew LEAVE sg_crew]" {
		t.Errorf("ben's device applied %v, want a LEAVE of each of the group's conversations", seen["ben"])
	}
	if len(seen["dan"]) != 2 {
		t.Errorf("dan's device applied %v, want a JOIN of each of the group's conversations", seen["dan"])
	}
	if len(seen["ann"]) != 0 {
		t.Errorf("ann, in the group throughout, applied %v", seen["ann"])
	}
}
