package history_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Ensure each seq reads as its viewer should see it, from chunks all viewers share: a message
// deleted for one user is deleted for them only, a tombstone of delete-for-everyone and a
// revoked message keep their header and lose their content, and is_read comes from the slot
// or the message.
func TestPerUserView(t *testing.T) {
	chunks := &memChunks{}
	chunks.put(conv, 1, im.Slot{Msg: msgAt(1)})
	chunks.put(conv, 2, im.Slot{Msg: msgAt(2), DelList: []string{"bob"}})
	chunks.put(conv, 3, im.Slot{Msg: msgAt(3), DelList: []string{"alice"}})
	tomb := msgAt(4)
	tomb.Content, tomb.Status = "", im.DeletedMessageStatus
	chunks.put(conv, 4, im.Slot{Msg: tomb})
	chunks.put(conv, 5, im.Slot{Msg: msgAt(5), Revoke: &im.Revoke{UserID: "alice", Role: im.RoleMember, Time: 77}})
	chunks.put(conv, 6, im.Slot{Msg: msgAt(6), IsRead: true})
	read := msgAt(7)
	read.IsRead = true
	chunks.put(conv, 7, im.Slot{Msg: read})
	// seq 8 was never written: its chunk exists, the slot is empty.

	views := func(viewer string) []im.MessageView {
		t.Helper()
		r := reader(chunks, im.SeqState{MaxSeq: 8})
		r.Viewer = viewer
		v, err := r.Messages(context.Background(), conv, []int64{1, 2, 3, 4, 5, 6, 7, 8})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bob, alice := views("bob"), views("alice")

	for _, tc := range []struct {
		name    string
		v       im.MessageView
		status  im.MessageStatus
		content string
		isRead  bool
	}{
		{"plain", bob[0], im.StatusOK, "text 1", false},
		{"deleted by the viewer", bob[1], im.StatusDeleted, "", false},
		{"deleted by another user, seen by the viewer", bob[2], im.StatusOK, "text 3", false},
		{"deleted by the viewer, seen by the one who did not", alice[1], im.StatusOK, "text 2", false},
		{"deleted by alice, seen by alice", alice[2], im.StatusDeleted, "", false},
		{"deleted for everyone", bob[3], im.StatusDeleted, "", false},
		{"deleted for everyone, seen by its sender", alice[3], im.StatusDeleted, "", false},
		{"revoked", bob[4], im.StatusRevoked, "", false},
		{"read flag on the slot", bob[5], im.StatusOK, "text 6", true},
		{"read flag on the message", bob[6], im.StatusOK, "text 7", true},
	} {
		if tc.v.Status != tc.status || tc.v.Message == nil || tc.v.Message.Content != tc.content || tc.v.IsRead != tc.isRead {
			t.Errorf("%s: status %s, message %+v, isRead %v; want %s, content %q, isRead %v",
				tc.name, tc.v.Status, tc.v.Message, tc.v.IsRead, tc.status, tc.content, tc.isRead)
			continue
		}
		// Whatever its status, a message keeps who sent it and when.
		if m := tc.v.Message; m.SendID != "alice" || m.ClientMsgID == "" || m.SendTime == 0 || m.Seq != tc.v.Seq {
			t.Errorf("%s: header lost: %+v", tc.name, m)
		}
	}
	if r := bob[4].Revoke; r == nil || r.UserID != "alice" || r.Time != 77 {
		t.Errorf("revoke info = %+v", r)
	}
	if bob[0].Revoke != nil || bob[1].Revoke != nil {
		t.Error("revoke info on a message not revoked")
	}
	if bob[7].Status != im.StatusMissing || bob[7].Message != nil || bob[7].Seq != 8 {
		t.Errorf("empty slot: %+v", bob[7])
	}
}

// Ensure the last message is the one at the max seq as the viewer sees it, and that there is
// none when the viewer may read no seq.
func TestLastMessage(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 120)
	chunks.put(conv, 120, im.Slot{Msg: msgAt(120), DelList: []string{"bob"}})

	v, err := reader(chunks, im.SeqState{MaxSeq: 119}).LastMessage(context.Background(), conv)
	if err != nil || v == nil || v.Seq != 119 || v.Status != im.StatusOK || v.Message.Content != "text 119" {
		t.Fatalf("last message at 119: %+v, %v", v, err)
	}
	if v, err := reader(chunks, im.SeqState{MaxSeq: 120}).LastMessage(context.Background(), conv); err != nil || v == nil || v.Status != im.StatusDeleted {
		t.Fatalf("last message deleted by the viewer: %+v, %v", v, err)
	}
	if v, err := reader(chunks, im.SeqState{MaxSeq: 130}).LastMessage(context.Background(), conv); err != nil || v == nil || v.Seq != 130 || v.Status != im.StatusMissing {
		t.Fatalf("last message at a hole: %+v, %v", v, err)
	}
	for _, st := range []im.SeqState{
		{MaxSeq: 0},                    // nothing sent yet
		{MaxSeq: 120, UserMinSeq: 121}, // cleared by the viewer
		{MaxSeq: 120, MinSeq: 121},     // cleared for everyone
	} {
		chunks.calls = nil
		if v, err := reader(chunks, st).LastMessage(context.Background(), conv); err != nil || v != nil {
			t.Errorf("%+v: last message %+v, %v; want none", st, v, err)
		}
		if len(chunks.calls) != 0 {
			t.Errorf("%+v: chunks read for no message", st)
		}
	}
}

// Ensure a dialect's adjustment sees every read's views after the per-user view, for the
// reader's viewer and through the reader's chunk source, and that what it changes (or the
// error it returns) is what the caller gets.
func TestAdjustSeesEveryRead(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 10)
	chunks.put(conv, 4, im.Slot{Msg: msgAt(4), DelList: []string{"bob"}})
	var seen [][]int64
	r := reader(chunks, im.SeqState{MaxSeq: 10})
	r.Adjust = func(ctx context.Context, src history.ChunkSource, viewer string, views []im.MessageView) error {
		if src != history.ChunkSource(chunks) || viewer != "bob" {
			t.Errorf("adjust got source %v and viewer %q", src, viewer)
		}
		seen = append(seen, seqsOf(views))
		for i := range views {
			if views[i].Status == im.StatusOK {
				views[i].Message = &im.Message{Content: "adjusted"}
			}
		}
		return nil
	}
	ctx := context.Background()
	msgs, err := r.Messages(ctx, conv, []int64{4, 5})
	if err != nil || msgs[0].Status != im.StatusDeleted || msgs[1].Message.Content != "adjusted" {
		t.Fatalf("Messages: %+v, %v", msgs, err)
	}
	limit := 3
	page, err := r.Page(ctx, conv, history.PageQuery{Limit: &limit})
	if err != nil || page.Messages[2].Message.Content != "adjusted" {
		t.Fatalf("Page: %+v, %v", page, err)
	}
	last, err := r.LastMessage(ctx, conv)
	if err != nil || last.Message.Content != "adjusted" {
		t.Fatalf("LastMessage: %+v, %v", last, err)
	}
	if want := [][]int64{{4, 5}, {8, 9, 10}, {10}}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("adjust saw %v, want %v", seen, want)
	}

	failed := errors.New("adjust failed")
	r.Adjust = func(context.Context, history.ChunkSource, string, []im.MessageView) error { return failed }
	if _, err := r.Messages(ctx, conv, []int64{1}); !errors.Is(err, failed) {
		t.Fatalf("adjust error lost: %v", err)
	}
}

// Ensure LastMessages answers each conversation as LastMessage does, from the states given
// (the state source is never asked), with one read of the chunk source for all of them, and
// none for conversations whose viewer may read no seq.
func TestLastMessagesOfAPage(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages("si_a_bob", 1, 3)
	chunks.putMessages("si_c_bob", 1, 150)
	chunks.put("si_c_bob", 150, im.Slot{Msg: msgAt(150), DelList: []string{"bob"}})
	states := []im.SeqState{
		{ConversationID: "si_a_bob", MaxSeq: 3},
		{ConversationID: "si_b_bob", MaxSeq: 5, UserMinSeq: 6}, // cleared by the viewer
		{ConversationID: "si_c_bob", MaxSeq: 150},
	}
	r := history.Reader{Viewer: "bob", Chunks: chunks, States: memStates{}}
	got, err := r.LastMessages(context.Background(), states)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] == nil || got[0].Seq != 3 || got[0].Message.Content != "text 3" || got[1] != nil ||
		got[2] == nil || got[2].Seq != 150 || got[2].Status != im.StatusDeleted {
		t.Fatalf("last messages %+v", got)
	}
	if len(chunks.calls) != 1 || len(chunks.calls[0]) != 2 {
		t.Fatalf("chunk reads %v, want one of the two chunks", chunks.calls)
	}
	chunks.err = errors.New("store down")
	if _, err := r.LastMessages(context.Background(), states[:1]); !errors.Is(err, chunks.err) {
		t.Fatalf("failing chunks: %v", err)
	}
}
