package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
)

const sendMutation = `mutation($in: SendMessageInput!) { sendMessage(input: $in) { conversationID seq status content } }`

const convQuery = `query($id: ID!) { conversation(id: $id) { id kind maxSeq minSeq readSeq unreadCount lastMessage { seq content } } }`

type convJSON struct {
	ID          string
	Kind        string
	MaxSeq      int64
	MinSeq      int64
	ReadSeq     int64
	UnreadCount int64
	LastMessage *msgJSON
}

func (g *gateway) sendGQL(token string, in map[string]any) msgJSON {
	g.t.Helper()
	var out struct{ SendMessage msgJSON }
	g.query(token, sendMutation, map[string]any{"in": in}, &out)
	return out.SendMessage
}

func (g *gateway) conversation(token, id string) convJSON {
	g.t.Helper()
	var out struct{ Conversation convJSON }
	g.query(token, convQuery, map[string]any{"id": id}, &out)
	return out.Conversation
}

// Ensure that after Redis loses every key between two sends, max seqs and unread counts stay
// exact for every user, the next message gets the next seq, and nothing stored is lost.
func TestRedisFlushKeepsSeqsExact(t *testing.T) {
	g := startGateway(t)
	alice, bob := g.token("alice"), g.token("bob")
	for i := 0; i < 3; i++ {
		g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})
	}
	if err := g.redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token         string
		unread, maxSq int64
	}{{alice, 0, 3}, {bob, 3, 3}} {
		c := g.conversation(tc.token, "si_alice_bob")
		if c.MaxSeq != tc.maxSq || c.UnreadCount != tc.unread {
			t.Errorf("after flush: %+v, want maxSeq %d unread %d", c, tc.maxSq, tc.unread)
		}
	}
	m := g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "after"})
	if m.Seq != 4 {
		t.Fatalf("first message after the flush got seq %d, want 4", m.Seq)
	}
	if err := g.redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	c := g.conversation(bob, "si_alice_bob")
	if c.MaxSeq != 4 || c.UnreadCount != 4 || c.LastMessage == nil || *c.LastMessage.Content != "after" {
		t.Errorf("bob after second flush: %+v", c)
	}
	var out struct{ Messages []msgJSON }
	g.query(bob, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3, 4}}, &out)
	for i, msg := range out.Messages {
		if msg.Status != "OK" || msg.Seq != int64(i+1) {
			t.Errorf("message %d after flushes: %+v", i+1, msg)
		}
	}
	if len(out.Messages) != 4 {
		t.Fatalf("got %d messages, want 4", len(out.Messages))
	}
}

// Ensure a retried send with the same clientMsgID returns the original seq and stores nothing.
func TestRetryKeepsOriginalSeq(t *testing.T) {
	g := startGateway(t)
	alice := g.token("alice")
	in := map[string]any{"recvID": "bob", "contentType": 101, "content": "once", "clientMsgID": "client-1"}
	first := g.sendGQL(alice, in)
	g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "other"})
	again := g.sendGQL(alice, in)
	if first.Seq != 1 || again.Seq != first.Seq {
		t.Fatalf("first seq %d, retry seq %d, want both 1", first.Seq, again.Seq)
	}
	if c := g.conversation(alice, "si_alice_bob"); c.MaxSeq != 2 {
		t.Errorf("maxSeq %d after a retry, want 2", c.MaxSeq)
	}
}

// Ensure mark-read is monotonic, idempotent, clamped to maxSeq, returns the new state, and sets
// is_read on the peer's messages in a single chat; own messages are never unread.
func TestMarkConversationRead(t *testing.T) {
	g := startGateway(t)
	alice, bob := g.token("alice"), g.token("bob")
	for i := 0; i < 5; i++ {
		g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	}
	if c := g.conversation(alice, "si_alice_bob"); c.ReadSeq != 5 || c.UnreadCount != 0 {
		t.Errorf("sender's own messages counted unread: %+v", c)
	}
	const mark = `mutation($c: ID!, $r: Int64) { markConversationRead(conversationID: $c, readSeq: $r) { readSeq unreadCount maxSeq } }`
	read := func(r any) convJSON {
		var out struct{ MarkConversationRead convJSON }
		g.query(bob, mark, map[string]any{"c": "si_alice_bob", "r": r}, &out)
		return out.MarkConversationRead
	}
	if c := read(3); c.ReadSeq != 3 || c.UnreadCount != 2 {
		t.Errorf("read to 3: %+v", c)
	}
	if c := read(2); c.ReadSeq != 3 || c.UnreadCount != 2 {
		t.Errorf("read back to 2 must change nothing: %+v", c)
	}
	if c := read(3); c.ReadSeq != 3 {
		t.Errorf("read to 3 again: %+v", c)
	}
	if c := read(99); c.ReadSeq != 5 || c.UnreadCount != 0 {
		t.Errorf("read past maxSeq must clamp to 5: %+v", c)
	}
	var out struct{ Messages []msgJSON }
	g.query(alice, `query { messages(conversationID: "si_alice_bob", seqs: [1, 5]) { seq isRead } }`, nil, &out)
	if len(out.Messages) != 2 || !out.Messages[0].IsRead || !out.Messages[1].IsRead {
		t.Errorf("alice should see her messages read by bob: %+v", out.Messages)
	}
	g.sendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "new"})
	if c := read(nil); c.ReadSeq != 6 || c.UnreadCount != 0 {
		t.Errorf("read with no seq must read up to maxSeq: %+v", c)
	}
}

// Ensure group conversations are readable and writable by their members only.
func TestGroupMembership(t *testing.T) {
	g := startGateway(t)
	err := g.m.Store.SetGroupMembers(context.Background(), "team", []chunkstore.GroupMember{
		{GroupID: "team", UserID: "alice", Role: im.RoleOwner},
		{GroupID: "team", UserID: "bob", Role: im.RoleMember},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := g.sendGQL(g.token("alice"), map[string]any{"groupID": "team", "contentType": 101, "content": "hello team"})
	if m.ConversationID != "sg_team" || m.Seq != 1 {
		t.Fatalf("group send: %+v", m)
	}
	if c := g.conversation(g.token("bob"), "sg_team"); c.Kind != "GROUP" || c.UnreadCount != 1 {
		t.Errorf("bob in the group: %+v", c)
	}
	eve := g.token("eve")
	if code := g.errorCode(eve, convQuery, map[string]any{"id": "sg_team"}); code != "FORBIDDEN" {
		t.Errorf("non-member read: code %q, want FORBIDDEN", code)
	}
	if code := g.errorCode(eve, sendMutation, map[string]any{"in": map[string]any{"groupID": "team", "contentType": 101, "content": "hi"}}); code != "FORBIDDEN" {
		t.Errorf("non-member send: code %q, want FORBIDDEN", code)
	}
	if c := g.conversation(g.token("alice"), "sg_team"); c.MaxSeq != 1 {
		t.Errorf("a refused send must store nothing: maxSeq %d", c.MaxSeq)
	}
}

// Ensure concurrent senders into one conversation get distinct, gap-free seqs and every
// message is stored exactly once.
func TestConcurrentSendersGetDistinctSeqs(t *testing.T) {
	g := startGateway(t)
	const senders, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				m := &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: fmt.Sprintf("w%d-%d", w, i), ContentType: 101, Content: fmt.Sprintf("w%d-%d", w, i)}
				if _, err := g.m.Ingest.Ingest(context.Background(), []*im.Message{m}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var seqs []int64
	for s := int64(1); s <= senders*each; s++ {
		seqs = append(seqs, s)
	}
	var out struct{ Messages []msgJSON }
	g.query(g.token("bob"), messagesQuery, map[string]any{"c": "si_alice_bob", "s": seqs}, &out)
	seen := map[string]bool{}
	for _, m := range out.Messages {
		if m.Status != "OK" || m.Content == nil || seen[*m.Content] {
			t.Fatalf("seq %d: %+v (duplicate or missing)", m.Seq, m)
		}
		seen[*m.Content] = true
	}
	if len(seen) != senders*each {
		t.Fatalf("%d distinct messages stored, want %d", len(seen), senders*each)
	}
	if c := g.conversation(g.token("bob"), "si_alice_bob"); c.MaxSeq != senders*each || c.UnreadCount != senders*each {
		t.Errorf("conversation: %+v", c)
	}
}
