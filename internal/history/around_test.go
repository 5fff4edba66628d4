package history_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Ensure a page around a seq holds that seq with (limit-1)/2 seqs after it and the rest before
// it, shifted to stay full at either end of the viewer's window, and says whether readable
// seqs lie beyond it, so that beforeSeq and afterSeq continue from its ends.
func TestAroundPage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		st            im.SeqState
		at            int64
		limit         *int
		from, to      int64
		before, after bool
	}{
		{name: "middle, even limit", st: im.SeqState{MaxSeq: 300}, at: 150, limit: ptr(20), from: 140, to: 159, before: true, after: true},
		{name: "middle, odd limit", st: im.SeqState{MaxSeq: 300}, at: 150, limit: ptr(21), from: 140, to: 160, before: true, after: true},
		{name: "default limit", st: im.SeqState{MaxSeq: 300}, at: 150, from: 125, to: 174, before: true, after: true},
		{name: "limit 1", st: im.SeqState{MaxSeq: 300}, at: 150, limit: ptr(1), from: 150, to: 150, before: true, after: true},
		{name: "limit 2", st: im.SeqState{MaxSeq: 300}, at: 150, limit: ptr(2), from: 149, to: 150, before: true, after: true},
		{name: "near seq 1: shifted to stay full", st: im.SeqState{MaxSeq: 300}, at: 3, limit: ptr(20), from: 1, to: 20, after: true},
		{name: "near the max seq: shifted", st: im.SeqState{MaxSeq: 300}, at: 298, limit: ptr(20), from: 281, to: 300, before: true},
		{name: "at the max seq", st: im.SeqState{MaxSeq: 300}, at: 300, limit: ptr(20), from: 281, to: 300, before: true},
		{name: "whole conversation fits", st: im.SeqState{MaxSeq: 12}, at: 6, limit: ptr(20), from: 1, to: 12},
		{name: "near the min seq: shifted, no more before", st: im.SeqState{MaxSeq: 300, MinSeq: 101}, at: 103, limit: ptr(20), from: 101, to: 120, after: true},
		{name: "at the viewer's own min seq", st: im.SeqState{MaxSeq: 300, UserMinSeq: 201}, at: 201, limit: ptr(10), from: 201, to: 210, after: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := &memChunks{}
			chunks.putMessages(conv, 1, 300)
			p, err := reader(chunks, tc.st).Page(context.Background(), conv, history.PageQuery{AroundSeq: ptr(tc.at), Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			got := seqsOf(p.Messages)
			if len(got) == 0 || got[0] != tc.from || got[len(got)-1] != tc.to || len(got) != int(tc.to-tc.from+1) {
				t.Fatalf("page holds %v, want %d..%d", got, tc.from, tc.to)
			}
			if p.HasMoreBefore != tc.before || p.HasMoreAfter != tc.after {
				t.Fatalf("hasMoreBefore %v, hasMoreAfter %v; want %v, %v", p.HasMoreBefore, p.HasMoreAfter, tc.before, tc.after)
			}
			// The pages either side continue exactly where this one ends.
			r := reader(chunks, tc.st)
			if tc.before {
				older, err := r.Page(context.Background(), conv, history.PageQuery{BeforeSeq: ptr(tc.from), Limit: ptr(5)})
				if err != nil || len(older.Messages) == 0 || older.Messages[len(older.Messages)-1].Seq != tc.from-1 {
					t.Fatalf("page before %d: %v, %v", tc.from, seqsOf(older.Messages), err)
				}
			}
			if tc.after {
				newer, err := r.Page(context.Background(), conv, history.PageQuery{AfterSeq: ptr(tc.to), Limit: ptr(5)})
				if err != nil || len(newer.Messages) == 0 || newer.Messages[0].Seq != tc.to+1 {
					t.Fatalf("page after %d: %v, %v", tc.to, seqsOf(newer.Messages), err)
				}
			}
		})
	}
}

// Ensure a page around a seq applies the per-user view as every page does: the centre and its
// neighbours read DELETED (for everyone, or for the viewer), REVOKED or MISSING in place, never
// left out.
func TestAroundPageShowsEachSeqAsTheViewerSees_It(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 120)
	chunks.put(conv, 49, im.Slot{Msg: msgAt(49), DelList: []string{"bob"}})
	chunks.put(conv, 50, im.Slot{Msg: msgAt(50), Revoke: &im.Revoke{UserID: "alice"}})
	chunks.put(conv, 51, im.Slot{Msg: &im.Message{Seq: 51, Status: im.DeletedMessageStatus}})
	chunks.put(conv, 52, im.Slot{})
	p, err := reader(chunks, im.SeqState{MaxSeq: 120}).Page(context.Background(), conv,
		history.PageQuery{AroundSeq: ptr(int64(50)), Limit: ptr(5)})
	if err != nil {
		t.Fatal(err)
	}
	want := []im.MessageStatus{im.StatusOK, im.StatusDeleted, im.StatusRevoked, im.StatusDeleted, im.StatusMissing}
	if got := statusesOf(p.Messages); !slices.Equal(got, want) || p.Messages[0].Seq != 48 {
		t.Fatalf("statuses %v from seq %d, want %v from 48", got, p.Messages[0].Seq, want)
	}
}

// Ensure a page around a seq within two chunks reads those two chunks, with one call.
func TestAroundPageReadsAtMostTwoChunks(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 1000)
	p, err := reader(chunks, im.SeqState{MaxSeq: 1000}).Page(context.Background(), conv,
		history.PageQuery{AroundSeq: ptr(int64(500)), Limit: ptr(50)})
	if err != nil || len(p.Messages) != 50 {
		t.Fatalf("%d messages, %v", len(p.Messages), err)
	}
	if n := readCount(chunks); n > 2 || len(chunks.calls) != 1 {
		t.Fatalf("chunk reads %v, want at most 2 chunks in one call", chunks.calls)
	}
}

// Ensure a seq below the viewer's min seq answers HISTORY_UNAVAILABLE, a seq not written yet
// NOT_FOUND, and the arguments that make no sense together are refused, all before any chunk
// is read.
func TestAroundPageRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   im.SeqState
		q    history.PageQuery
		code string
	}{
		{"below the min seq", im.SeqState{MaxSeq: 300, MinSeq: 101}, history.PageQuery{AroundSeq: ptr(int64(100))}, im.EHISTORY},
		{"below the viewer's min seq", im.SeqState{MaxSeq: 300, UserMinSeq: 301}, history.PageQuery{AroundSeq: ptr(int64(300))}, im.EHISTORY},
		{"above the max seq", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundSeq: ptr(int64(301))}, im.ENOTFOUND},
		{"seq 0", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundSeq: ptr(int64(0))}, im.EINVALID},
		{"with beforeSeq", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundSeq: ptr(int64(5)), BeforeSeq: ptr(int64(9))}, im.EINVALID},
		{"with afterSeq", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundClientMsgID: ptr("c5"), AfterSeq: ptr(int64(1))}, im.EINVALID},
		{"both around arguments", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundSeq: ptr(int64(5)), AroundClientMsgID: ptr("c5")}, im.EINVALID},
		{"empty client message ID", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundClientMsgID: ptr("")}, im.EINVALID},
		{"client message ID too long", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundClientMsgID: ptr(strings.Repeat("x", im.MaxClientMsgIDLength+1))}, im.EINVALID},
		{"limit above the bound", im.SeqState{MaxSeq: 300}, history.PageQuery{AroundSeq: ptr(int64(5)), Limit: ptr(im.MaxHistoryLimit + 1)}, im.ELIMIT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := &memChunks{}
			chunks.putMessages(conv, 1, 300)
			_, err := reader(chunks, tc.st).Page(context.Background(), conv, tc.q)
			if im.ErrorCode(err) != tc.code {
				t.Fatalf("code %q (%v), want %q", im.ErrorCode(err), err, tc.code)
			}
			if len(chunks.calls) != 0 {
				t.Fatalf("chunks read: %v", chunks.calls)
			}
		})
	}
}

// memClientMsgs is a client message index over a map, newest seq first as a store answers.
type memClientMsgs map[string][]int64

func (m memClientMsgs) FindClientMsgIDSeqs(_ context.Context, conversationID, clientMsgID string) ([]int64, error) {
	return m[conversationID+"|"+clientMsgID], nil
}

// Ensure a page around a client message ID centres on the newest message with that ID the
// viewer can read: a claim whose slot holds another message, one deleted for everyone or for
// the viewer, or one below their min seq is passed over; a revoked message is still a place to
// jump to. It reads no chunk beyond the page's.
func TestAroundClientMsgID(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 300)
	shared := func(seq int64, sender string) *im.Message {
		m := msgAt(seq)
		m.ClientMsgID, m.SendID = "dup", sender
		return m
	}
	chunks.put(conv, 40, im.Slot{Msg: shared(40, "alice")})
	chunks.put(conv, 120, im.Slot{Msg: shared(120, "bob")})
	chunks.put(conv, 150, im.Slot{Msg: shared(150, "carol"), DelList: []string{"bob"}})
	chunks.put(conv, 160, im.Slot{Msg: &im.Message{Seq: 160, ClientMsgID: "dup", Status: im.DeletedMessageStatus}})
	chunks.put(conv, 170, im.Slot{Msg: shared(170, "dave"), Revoke: &im.Revoke{UserID: "dave"}})
	index := memClientMsgs{
		conv + "|dup":    {250, 170, 160, 150, 120, 40}, // 250 holds c250: a claim moved on
		conv + "|gone":   {10},
		conv + "|nobody": {},
		conv + "|c200":   {200},
		conv + "|c230":   {230},
	}
	for _, tc := range []struct {
		name, id string
		st       im.SeqState
		at       int64
		code     string
	}{
		{name: "newest readable, revoked", id: "dup", st: im.SeqState{MaxSeq: 300}, at: 170},
		{name: "plain", id: "c200", st: im.SeqState{MaxSeq: 300}, at: 200},
		{name: "newest beyond the max seq the viewer knows", id: "dup", st: im.SeqState{MaxSeq: 165}, at: 120},
		{name: "older ones below the min seq", id: "dup", st: im.SeqState{MaxSeq: 300, MinSeq: 100}, at: 170},
		{name: "unknown ID", id: "nobody", st: im.SeqState{MaxSeq: 300}, code: im.ENOTFOUND},
		{name: "only below the min seq", id: "gone", st: im.SeqState{MaxSeq: 300, MinSeq: 101}, code: im.EHISTORY},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks.calls = nil
			r := reader(chunks, tc.st)
			r.ClientMsgs = index
			p, err := r.Page(context.Background(), conv, history.PageQuery{AroundClientMsgID: ptr(tc.id), Limit: ptr(11)})
			if tc.code != "" {
				if im.ErrorCode(err) != tc.code {
					t.Fatalf("code %q (%v), want %q", im.ErrorCode(err), err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := seqsOf(p.Messages); len(got) != 11 || got[5] != tc.at {
				t.Fatalf("page %v, want it centred on %d", got, tc.at)
			}
		})
	}

	chunks.calls = nil
	r := reader(chunks, im.SeqState{MaxSeq: 300})
	r.ClientMsgs = index
	if _, err := r.Page(context.Background(), conv, history.PageQuery{AroundClientMsgID: ptr("c230"), Limit: ptr(11)}); err != nil {
		t.Fatal(err)
	}
	if n := readCount(chunks); n != 1 {
		t.Fatalf("chunk reads %v for a page within one chunk, want that chunk once", chunks.calls)
	}

	r.ClientMsgs = nil
	_, err := r.Page(context.Background(), conv, history.PageQuery{AroundClientMsgID: ptr("c200")})
	if im.ErrorCode(err) != im.EUNSUPPORTED {
		t.Fatalf("without an index: code %q (%v), want %q", im.ErrorCode(err), err, im.EUNSUPPORTED)
	}
}

// readCount is how many chunks were read, over all calls.
func readCount(m *memChunks) int {
	n := 0
	for _, c := range m.calls {
		n += len(c)
	}
	return n
}
