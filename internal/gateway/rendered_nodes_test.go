package gateway_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// listNodesQuery asks for everything a remembered node may hold, with nothing that varies
// with variables, so that its nodes are remembered.
const listNodesQuery = `{ viewer { conversations { nodes { __typename id kind maxSeq minSeq readSeq unreadCount
	lastMessage { seq status content sendID isRead revoke { userID } atUserIDs } } } } }`

type listNode struct {
	ID          string
	MaxSeq      int64
	ReadSeq     int64
	UnreadCount int64
	LastMessage *struct {
		Seq     int64
		Status  string
		Content *string
		Revoke  *struct{ UserID string }
	}
}

// Ensure a conversation list read again writes the conversations that did not change from the
// instance's memory, without reading their last messages again, and that whatever a node
// shows is never taken from memory once it changed: a new message, a read, a revoke; and that
// each viewer gets their own node.
func TestConversationNodesRemembered(t *testing.T) {
	// Without the chunk memory every last message the gateway reads costs a Redis round trip,
	// so the round trips tell which nodes were rendered again.
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.ChunkMemory = -1 })
	g.Send("bob", "alice", "", 2)
	g.Send("carol", "alice", "", 1)
	alice, bob := g.Token("alice"), g.Token("bob")
	read := func(token string) (map[string]listNode, json.RawMessage, int) {
		t.Helper()
		g.RoundTrips.Take()
		r := g.Post(token, listNodesQuery, nil)
		if len(r.Errors) > 0 {
			t.Fatalf("errors: %+v", r.Errors)
		}
		var page struct {
			Viewer struct{ Conversations struct{ Nodes []listNode } }
		}
		if err := json.Unmarshal(r.Data, &page); err != nil {
			t.Fatal(err)
		}
		nodes := map[string]listNode{}
		for _, n := range page.Viewer.Conversations.Nodes {
			nodes[n.ID] = n
		}
		return nodes, r.Data, testenv.Matching(g.RoundTrips.Take(), "hmget", ":chunk:")
	}
	read(alice) // the states' first read may come from MongoDB, without a chunks version
	first, firstRaw, _ := read(alice)
	again, againRaw, chunkReads := read(alice)
	if !bytes.Equal(firstRaw, againRaw) {
		t.Fatalf("the same list answered differently:\n%s\n%s", firstRaw, againRaw)
	}
	if chunkReads != 0 {
		t.Errorf("the unchanged list read chunks %d times, want none (its nodes are remembered)", chunkReads)
	}
	if n := again["si_alice_bob"]; n.MaxSeq != 2 || n.UnreadCount != 2 || n.LastMessage == nil || *n.LastMessage.Content != "m2" {
		t.Fatalf("bob's conversation: %+v", n)
	}

	// Bob's own view of the conversation alice's memory holds: his read state, not hers.
	if n, _, _ := read(bob); n["si_alice_bob"].UnreadCount != 0 || n["si_alice_bob"].ReadSeq != 2 {
		t.Errorf("bob sees %+v, want his own read state (he sent everything)", n["si_alice_bob"])
	}

	g.Send("bob", "alice", "", 1) // seq 3, "m1"
	now, _, chunkReads := read(alice)
	if n := now["si_alice_bob"]; n.MaxSeq != 3 || n.UnreadCount != 3 || n.LastMessage == nil || n.LastMessage.Seq != 3 || *n.LastMessage.Content != "m1" {
		t.Errorf("after a new message, bob's conversation is %+v", n)
	}
	if was, is := jsonOf(t, first["si_alice_carol"]), jsonOf(t, now["si_alice_carol"]); was != is {
		t.Errorf("carol's unchanged conversation changed: %s, was %s", is, was)
	}
	if chunkReads != 1 {
		t.Errorf("after one conversation changed the list read chunks %d times, want 1", chunkReads)
	}

	g.Post(alice, `mutation { markConversationRead(conversationID: "si_alice_bob") { readSeq } }`, nil)
	if n, _, _ := read(alice); n["si_alice_bob"].UnreadCount != 0 || n["si_alice_bob"].ReadSeq != 3 {
		t.Errorf("after alice read it, bob's conversation is %+v", n["si_alice_bob"])
	}

	if r := g.Post(bob, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 3) { seq } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("revoke: %+v", r.Errors)
	}
	if n, _, _ := read(alice); n["si_alice_bob"].LastMessage == nil || n["si_alice_bob"].LastMessage.Status != "REVOKED" ||
		n["si_alice_bob"].LastMessage.Revoke == nil || n["si_alice_bob"].LastMessage.Revoke.UserID != "bob" {
		t.Errorf("after bob revoked it, the last message is %+v", n["si_alice_bob"].LastMessage)
	}
}

// Ensure a remembered node is written only for the selection it was rendered for: what
// variables change (a directive's condition), another selection of the same nodes, aliases
// and fragments each answer what they ask.
func TestConversationNodesFollowTheSelection(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 2)
	alice := g.Token("alice")
	answer := func(query string, vars map[string]any) string {
		t.Helper()
		r := g.Post(alice, query, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", query, r.Errors)
		}
		return string(r.Data)
	}
	const conditional = `query($with: Boolean!) { viewer { conversations { nodes { id lastMessage @include(if: $with) { seq } } } } }`
	const plain = `{ viewer { conversations { nodes { id unreadCount } } } }`
	const aliased = `{ viewer { conversations { a: nodes { id } b: nodes { unreadCount lastMessage { content } } } } }`
	const fragment = `{ viewer { conversations { nodes { ...N } } } } fragment N on Conversation { id lastMessage { seq } }`
	for round := range 3 { // the first round renders, the others may be written from memory
		for _, tc := range []struct {
			query string
			vars  map[string]any
			want  string
		}{
			{conditional, map[string]any{"with": true}, `{"viewer":{"conversations":{"nodes":[{"id":"si_alice_bob","lastMessage":{"seq":2}}]}}}`},
			{conditional, map[string]any{"with": false}, `{"viewer":{"conversations":{"nodes":[{"id":"si_alice_bob"}]}}}`},
			{plain, nil, `{"viewer":{"conversations":{"nodes":[{"id":"si_alice_bob","unreadCount":2}]}}}`},
			{aliased, nil, `{"viewer":{"conversations":{"a":[{"id":"si_alice_bob"}],"b":[{"unreadCount":2,"lastMessage":{"content":"m2"}}]}}}`},
			{fragment, nil, `{"viewer":{"conversations":{"nodes":[{"id":"si_alice_bob","lastMessage":{"seq":2}}]}}}`},
		} {
			if got := answer(tc.query, tc.vars); got != tc.want {
				t.Errorf("round %d, %s %v:\n got %s\nwant %s", round, tc.query, tc.vars, got, tc.want)
			}
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
