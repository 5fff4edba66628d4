package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// Ensure that after Redis loses every key between two sends, max seqs and unread counts stay
// exact for every user, the next message gets the next seq, and nothing stored is lost.
func TestRedisFlushKeepsSeqsExact(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})
	}
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token         string
		unread, maxSq int64
	}{{alice, 0, 3}, {bob, 3, 3}} {
		c := g.Conversation(tc.token, "si_alice_bob")
		if c.MaxSeq != tc.maxSq || c.UnreadCount != tc.unread {
			t.Errorf("after flush: %+v, want maxSeq %d unread %d", c, tc.maxSq, tc.unread)
		}
	}
	m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "after"})
	if m.Seq != 4 {
		t.Fatalf("first message after the flush got seq %d, want 4", m.Seq)
	}
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	c := g.Conversation(bob, "si_alice_bob")
	if c.MaxSeq != 4 || c.UnreadCount != 4 || c.LastMessage == nil || *c.LastMessage.Content != "after" {
		t.Errorf("bob after second flush: %+v", c)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3, 4}}, &out)
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
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	in := map[string]any{"recvID": "bob", "contentType": 101, "content": "once", "clientMsgID": "client-1"}
	first := g.SendGQL(alice, in)
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "other"})
	again := g.SendGQL(alice, in)
	if first.Seq != 1 || again.Seq != first.Seq {
		t.Fatalf("first seq %d, retry seq %d, want both 1", first.Seq, again.Seq)
	}
	if c := g.Conversation(alice, "si_alice_bob"); c.MaxSeq != 2 {
		t.Errorf("maxSeq %d after a retry, want 2", c.MaxSeq)
	}
}

// Ensure mark-read is monotonic, idempotent, clamped to maxSeq, returns the new state, and sets
// is_read on the peer's messages in a single chat; own messages are never unread.
func TestMarkConversationRead(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 0; i < 5; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})
	}
	if c := g.Conversation(alice, "si_alice_bob"); c.ReadSeq != 5 || c.UnreadCount != 0 {
		t.Errorf("sender's own messages counted unread: %+v", c)
	}
	const mark = `mutation($c: ID!, $r: Int64) { markConversationRead(conversationID: $c, readSeq: $r) { readSeq unreadCount maxSeq } }`
	read := func(r any) gatewaytest.Conversation {
		var out struct{ MarkConversationRead gatewaytest.Conversation }
		g.Query(bob, mark, map[string]any{"c": "si_alice_bob", "r": r}, &out)
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
	var out struct{ Messages []gatewaytest.Message }
	g.Query(alice, `query { messages(conversationID: "si_alice_bob", seqs: [1, 5]) { seq isRead } }`, nil, &out)
	if len(out.Messages) != 2 || !out.Messages[0].IsRead || !out.Messages[1].IsRead {
		t.Errorf("alice should see her messages read by bob: %+v", out.Messages)
	}
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "new"})
	if c := read(nil); c.ReadSeq != 6 || c.UnreadCount != 0 {
		t.Errorf("read with no seq must read up to maxSeq: %+v", c)
	}
}

// Ensure group conversations are readable and writable by their members only.
func TestGroupMembership(t *testing.T) {
	g := gatewaytest.Start(t)
	err := g.Store.ApplyGroupMembers(context.Background(), "team", nil, []chunkstore.GroupMember{
		{GroupID: "team", UserID: "alice", Role: im.RoleOwner},
		{GroupID: "team", UserID: "bob", Role: im.RoleMember},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := g.SendGQL(g.Token("alice"), map[string]any{"groupID": "team", "contentType": 101, "content": "hello team"})
	if m.ConversationID != "sg_team" || m.Seq != 1 {
		t.Fatalf("group send: %+v", m)
	}
	if c := g.Conversation(g.Token("bob"), "sg_team"); c.Kind != "GROUP" || c.UnreadCount != 1 {
		t.Errorf("bob in the group: %+v", c)
	}
	eve := g.Token("eve")
	if code := g.ErrorCode(eve, gatewaytest.ConversationQuery, map[string]any{"id": "sg_team"}); code != "FORBIDDEN" {
		t.Errorf("non-member read: code %q, want FORBIDDEN", code)
	}
	if code := g.ErrorCode(eve, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"groupID": "team", "contentType": 101, "content": "hi"}}); code != "FORBIDDEN" {
		t.Errorf("non-member send: code %q, want FORBIDDEN", code)
	}
	if c := g.Conversation(g.Token("alice"), "sg_team"); c.MaxSeq != 1 {
		t.Errorf("a refused send must store nothing: maxSeq %d", c.MaxSeq)
	}
}

// Ensure concurrent senders into one conversation get distinct, gap-free seqs and every
// message is stored exactly once.
func TestConcurrentSendersGetDistinctSeqs(t *testing.T) {
	g := gatewaytest.Start(t)
	const senders, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				m := &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: fmt.Sprintf("w%d-%d", w, i), ContentType: 101, Content: fmt.Sprintf("w%d-%d", w, i)}
				if _, err := g.Ingest.Ingest(context.Background(), []*im.Message{m}); err != nil {
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
	var out struct{ Messages []gatewaytest.Message }
	g.Query(g.Token("bob"), gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": seqs}, &out)
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
	if c := g.Conversation(g.Token("bob"), "si_alice_bob"); c.MaxSeq != senders*each || c.UnreadCount != senders*each {
		t.Errorf("conversation: %+v", c)
	}
}
