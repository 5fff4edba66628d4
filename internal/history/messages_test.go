package history_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

const conv = "si_alice_bob"

// reader returns bob's reader over chunks, in a conversation with state st.
func reader(chunks *memChunks, st im.SeqState) history.Reader {
	st.ConversationID = conv
	return history.Reader{Viewer: "bob", Chunks: chunks, States: memStates{states: map[string]im.SeqState{conv: st}}}
}

func seqsOf(views []im.MessageView) []int64 {
	out := make([]int64, len(views))
	for i, v := range views {
		out[i] = v.Seq
	}
	return out
}

func statusesOf(views []im.MessageView) []im.MessageStatus {
	out := make([]im.MessageStatus, len(views))
	for i, v := range views {
		out[i] = v.Status
	}
	return out
}

// Ensure seqs come back in the order asked, duplicates kept, holes as MISSING placeholders
// (a seq never written, and one in a chunk that does not exist), and seqs above the max seq
// left out.
func TestMessagesOrderPlaceholdersAndMaxSeq(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 150)
	chunks.put(conv, 42, im.Slot{}) // a hole inside a chunk
	r := reader(chunks, im.SeqState{MaxSeq: 250})

	views, err := r.Messages(context.Background(), conv, []int64{120, 3, 42, 260, 3, 230, 251})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqsOf(views), []int64{120, 3, 42, 3, 230}; !reflect.DeepEqual(got, want) {
		t.Fatalf("seqs = %v, want %v", got, want)
	}
	want := []im.MessageStatus{im.StatusOK, im.StatusOK, im.StatusMissing, im.StatusOK, im.StatusMissing}
	if got := statusesOf(views); !reflect.DeepEqual(got, want) {
		t.Fatalf("statuses = %v, want %v", got, want)
	}
	if views[0].Message.Content != "text 120" || views[1].Message.Content != "text 3" || views[0].ConversationID != conv {
		t.Fatalf("wrong messages: %+v, %+v", views[0].Message, views[1].Message)
	}
	if views[2].Message != nil || views[4].Message != nil {
		t.Fatal("a MISSING placeholder carries a message")
	}
}

// Ensure seqs spread over several chunks cost one call to the chunk source, naming each
// chunk once.
func TestMessagesAskTheChunkSourceOnce(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 1000)
	r := reader(chunks, im.SeqState{MaxSeq: 1000})

	// 30 seqs over 7 chunks, interleaved.
	var seqs []int64
	for i := int64(0); i < 30; i++ {
		seqs = append(seqs, 1+(i%7)*100+i)
	}
	views, err := r.Messages(context.Background(), conv, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 30 {
		t.Fatalf("%d views for 30 seqs", len(views))
	}
	if len(chunks.calls) != 1 {
		t.Fatalf("%d calls to the chunk source, want 1", len(chunks.calls))
	}
	if got := chunks.calls[0]; len(got) != 7 {
		t.Fatalf("the call named %d doc IDs (%v), want the 7 chunks once each", len(got), got)
	}
	seen := map[string]bool{}
	for _, id := range chunks.calls[0] {
		if seen[id] {
			t.Fatalf("doc ID %s asked twice", id)
		}
		seen[id] = true
	}
}

// Ensure the visible window starts at the higher of the conversation's and the viewer's min
// seq (1 when neither is set), and that a seq below it answers HISTORY_UNAVAILABLE with
// where readable history starts, before any chunk is read.
func TestMessagesBelowTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		st         im.SeqState
		wantMinSeq int64 // 0: every seq asked for is readable
	}{
		{"no floor", im.SeqState{MaxSeq: 300}, 0},
		{"retention", im.SeqState{MaxSeq: 300, MinSeq: 101}, 101},
		{"cleared for the viewer", im.SeqState{MaxSeq: 300, UserMinSeq: 151}, 151},
		{"viewer's floor above the conversation's", im.SeqState{MaxSeq: 300, MinSeq: 101, UserMinSeq: 151}, 151},
		{"conversation's floor above the viewer's", im.SeqState{MaxSeq: 300, MinSeq: 201, UserMinSeq: 151}, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := &memChunks{}
			chunks.putMessages(conv, 1, 300)
			views, err := reader(chunks, tc.st).Messages(context.Background(), conv, []int64{250, 150, 1})
			if tc.wantMinSeq == 0 {
				if err != nil || len(views) != 3 {
					t.Fatalf("views %v, err %v; want all three", seqsOf(views), err)
				}
				return
			}
			var gone *im.HistoryUnavailableError
			if !errors.As(err, &gone) || im.ErrorCode(err) != im.EHISTORY {
				t.Fatalf("err = %v, want history unavailable", err)
			}
			if gone.MinSeq != tc.wantMinSeq {
				t.Fatalf("min seq %d, want %d", gone.MinSeq, tc.wantMinSeq)
			}
			if want := fmt.Sprintf("history of %s before seq %d is unavailable: deleted by retention or cleared", conv, tc.wantMinSeq); im.ErrorMessage(err) != want {
				t.Fatalf("message %q, want %q", im.ErrorMessage(err), want)
			}
			if len(chunks.calls) != 0 {
				t.Fatalf("chunks were read for an unavailable answer: %v", chunks.calls)
			}
		})
	}
	// The window's edges: the min seq is readable, the seq right below it is not.
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 300)
	r := reader(chunks, im.SeqState{MaxSeq: 300, MinSeq: 101})
	views, err := r.Messages(context.Background(), conv, []int64{101, 300})
	if err != nil || len(views) != 2 || views[0].Status != im.StatusOK || views[1].Status != im.StatusOK {
		t.Fatalf("seqs 101 and 300 in window 101..300: views %+v, err %v", views, err)
	}
	if _, err := r.Messages(context.Background(), conv, []int64{300, 100}); im.ErrorCode(err) != im.EHISTORY {
		t.Fatalf("seq 100 below min seq 101: err %v", err)
	}
}

// Ensure bad seq lists are refused with their codes before any store is asked.
func TestMessagesRefuseBadSeqs(t *testing.T) {
	tooMany := make([]int64, im.MaxSeqsPerRequest+1)
	for i := range tooMany {
		tooMany[i] = int64(i + 1)
	}
	for _, tc := range []struct {
		seqs []int64
		code string
	}{
		{[]int64{1, 0}, im.EINVALID},
		{[]int64{-5}, im.EINVALID},
		{[]int64{im.MaxSeq + 1}, im.EINVALID},
		{tooMany, im.ELIMIT},
	} {
		chunks := &memChunks{}
		r := history.Reader{Viewer: "bob", Chunks: chunks, States: memStates{err: errors.New("state read")}}
		if _, err := r.Messages(context.Background(), conv, tc.seqs); im.ErrorCode(err) != tc.code {
			t.Errorf("%d seqs: code %q (%v), want %q", len(tc.seqs), im.ErrorCode(err), err, tc.code)
		}
		if len(chunks.calls) != 0 {
			t.Errorf("chunks were read for bad input")
		}
	}
}

// Ensure a store failure is an error, never an empty answer or MISSING messages.
func TestStoreFailuresAreErrors(t *testing.T) {
	failed := errors.New("store down")
	chunks := &memChunks{err: failed}
	r := reader(chunks, im.SeqState{MaxSeq: 10})
	if views, err := r.Messages(context.Background(), conv, []int64{1, 2}); !errors.Is(err, failed) || views != nil {
		t.Fatalf("Messages with failing chunks: %v, %v", views, err)
	}
	if p, err := r.Page(context.Background(), conv, history.PageQuery{}); !errors.Is(err, failed) || p.Messages != nil {
		t.Fatalf("Page with failing chunks: %+v, %v", p, err)
	}
	if v, err := r.LastMessage(context.Background(), conv); !errors.Is(err, failed) || v != nil {
		t.Fatalf("LastMessage with failing chunks: %+v, %v", v, err)
	}

	r = history.Reader{Viewer: "bob", Chunks: &memChunks{}, States: memStates{err: failed}}
	if _, err := r.Messages(context.Background(), conv, []int64{1}); !errors.Is(err, failed) {
		t.Fatalf("Messages with failing states: %v", err)
	}
	if _, err := r.Page(context.Background(), conv, history.PageQuery{}); !errors.Is(err, failed) {
		t.Fatalf("Page with failing states: %v", err)
	}
	if _, err := r.LastMessage(context.Background(), conv); !errors.Is(err, failed) {
		t.Fatalf("LastMessage with failing states: %v", err)
	}
}

// Ensure a chunk source that answers fewer chunks than asked is an internal error, not
// messages read as missing.
func TestMisalignedChunkSourceIsAnError(t *testing.T) {
	short := history.ChunkFunc(func(context.Context, []string) ([]*im.Chunk, error) { return nil, nil })
	_, err := history.Slots(context.Background(), short, conv, []int64{1, 101})
	if im.ErrorCode(err) != im.EINTERNAL {
		t.Fatalf("err = %v, want internal", err)
	}
}
