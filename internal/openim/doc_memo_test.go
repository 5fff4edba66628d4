package openim_test

import (
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// Ensure that with MemoTTL the documents read from MongoDB for what OpenIM's Redis lacks are
// read once, then kept: until the conversation is forgotten (the feed reported a change of
// it), or the TTL passes; and that a refusal is not kept (a new conversation reads at once).
func TestMemoKeepsDocumentsUntilForgotten(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("x")),
		openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("y")))
	d.PersistReadSeq(chat, "b", 1) // in MongoDB only: Redis has no SEQ_USER_READ
	s := d.open(openim.Options{MemoTTL: 300 * time.Millisecond})

	readSeq := func() int64 {
		t.Helper()
		st, err := s.States(ctx, "b", []string{chat})
		if err != nil {
			t.Fatal(err)
		}
		return st[0].ReadSeq
	}
	if got := readSeq(); got != 1 {
		t.Fatalf("readSeq %d, want 1", got)
	}
	d.cmds.Reset()
	readSeq()
	if n := d.cmds.Count("seq_user", "find") + d.cmds.Count("seq", "find"); n != 0 {
		t.Fatalf("a second read sent %d finds, want none", n)
	}
	d.PersistReadSeq(chat, "b", 2)
	if got := readSeq(); got != 1 {
		t.Fatalf("before Forget: readSeq %d, want the kept 1", got)
	}
	s.Forget(chat)
	if got := readSeq(); got != 2 {
		t.Fatalf("after Forget: readSeq %d, want 2", got)
	}
	time.Sleep(400 * time.Millisecond)
	d.cmds.Reset()
	readSeq()
	if d.cmds.Count("seq_user", "find") != 1 {
		t.Fatal("after the TTL the document was not read again")
	}

	// A conversation the user has no document for yet is refused, and readable as soon as
	// OpenIM creates it.
	other := openimtest.SingleConversationID("b", "c")
	if ok, err := s.CanRead(ctx, "b", []string{other}); err != nil || ok[0] {
		t.Fatalf("CanRead before the conversation exists: %v %v", ok, err)
	}
	d.Send(other, openimtest.Single("c", "b", openimtest.ContentText, openimtest.TextContent("hi")))
	if ok, err := s.CanRead(ctx, "b", []string{other}); err != nil || !ok[0] {
		t.Fatalf("CanRead once it exists: %v %v", ok, err)
	}
}
