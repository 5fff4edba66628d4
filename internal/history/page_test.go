package history_test

import (
	"context"
	"errors"
	"testing"

	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

func ptr[T any](v T) *T { return &v }

// Ensure a page holds the seqs a client expects for its bounds, in ascending order, and says
// whether readable seqs lie beyond either end.
func TestPage(t *testing.T) {
	const none = int64(-1) // the page is empty
	for _, tc := range []struct {
		name          string
		st            im.SeqState
		q             history.PageQuery
		from, to      int64
		before, after bool // hasMoreBefore, hasMoreAfter
	}{
		{name: "empty conversation", st: im.SeqState{}, q: history.PageQuery{}, from: none},
		{name: "newest page, default limit", st: im.SeqState{MaxSeq: 120}, from: 71, to: 120, before: true},
		{name: "whole conversation fits", st: im.SeqState{MaxSeq: 30}, from: 1, to: 30},
		{name: "limit 1", st: im.SeqState{MaxSeq: 30}, q: history.PageQuery{Limit: ptr(1)}, from: 30, to: 30, before: true},
		{name: "largest limit", st: im.SeqState{MaxSeq: 500}, q: history.PageQuery{Limit: ptr(im.MaxHistoryLimit)}, from: 301, to: 500, before: true},
		{name: "limit equals what is left", st: im.SeqState{MaxSeq: 30}, q: history.PageQuery{Limit: ptr(30)}, from: 1, to: 30},
		{name: "beforeSeq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{BeforeSeq: ptr(int64(60)), Limit: ptr(10)}, from: 50, to: 59, before: true, after: true},
		{name: "beforeSeq above the max seq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{BeforeSeq: ptr(int64(500)), Limit: ptr(10)}, from: 111, to: 120, before: true},
		{name: "beforeSeq reaches seq 1", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{BeforeSeq: ptr(int64(6)), Limit: ptr(10)}, from: 1, to: 5, after: true},
		{name: "beforeSeq 1", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{BeforeSeq: ptr(int64(1))}, from: none},
		{name: "afterSeq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(60)), Limit: ptr(10)}, from: 61, to: 70, before: true, after: true},
		{name: "afterSeq reaches the max seq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(115)), Limit: ptr(10)}, from: 116, to: 120, before: true},
		{name: "afterSeq at the max seq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(120))}, from: none},
		{name: "afterSeq above the max seq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(200))}, from: none},
		{name: "both bounds, limit cuts after afterSeq", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(10)), BeforeSeq: ptr(int64(20)), Limit: ptr(5)}, from: 11, to: 15, before: true, after: true},
		{name: "both bounds, all between fits", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(10)), BeforeSeq: ptr(int64(14))}, from: 11, to: 13, before: true, after: true},
		{name: "both bounds, nothing between", st: im.SeqState{MaxSeq: 120}, q: history.PageQuery{AfterSeq: ptr(int64(5)), BeforeSeq: ptr(int64(6))}, from: none, before: true, after: true},
		{name: "newest page reaches the min seq", st: im.SeqState{MaxSeq: 120, MinSeq: 101}, from: 101, to: 120},
		{name: "beforeSeq page reaches the min seq", st: im.SeqState{MaxSeq: 120, MinSeq: 101}, q: history.PageQuery{BeforeSeq: ptr(int64(105)), Limit: ptr(10)}, from: 101, to: 104, after: true},
		{name: "beforeSeq at the min seq 1", st: im.SeqState{MaxSeq: 120, UserMinSeq: 1}, q: history.PageQuery{BeforeSeq: ptr(int64(1))}, from: none},
		{name: "afterSeq below the min seq starts at the min seq", st: im.SeqState{MaxSeq: 120, UserMinSeq: 101}, q: history.PageQuery{AfterSeq: ptr(int64(5)), Limit: ptr(10)}, from: 101, to: 110, after: true},
		{name: "cleared: nothing readable", st: im.SeqState{MaxSeq: 120, UserMinSeq: 121}, from: none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := &memChunks{}
			chunks.putMessages(conv, 1, 500)
			p, err := reader(chunks, tc.st).Page(context.Background(), conv, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for s := tc.from; tc.from != none && s <= tc.to; s++ {
				want = append(want, s)
			}
			got := seqsOf(p.Messages)
			if len(got) != len(want) || (len(want) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
				t.Fatalf("page holds %v, want %v", got, want)
			}
			for i := 1; i < len(got); i++ {
				if got[i] != got[i-1]+1 {
					t.Fatalf("page is not consecutive ascending seqs: %v", got)
				}
			}
			for _, v := range p.Messages {
				if v.Status != im.StatusOK {
					t.Fatalf("seq %d: %s", v.Seq, v.Status)
				}
			}
			if p.HasMoreBefore != tc.before || p.HasMoreAfter != tc.after {
				t.Fatalf("hasMoreBefore %v, hasMoreAfter %v; want %v, %v", p.HasMoreBefore, p.HasMoreAfter, tc.before, tc.after)
			}
			if len(want) == 0 && len(chunks.calls) != 0 {
				t.Fatalf("chunks read for an empty page: %v", chunks.calls)
			}
			if len(want) > 0 && len(chunks.calls) != 1 {
				t.Fatalf("%d calls to the chunk source for one page, want 1", len(chunks.calls))
			}
		})
	}
}

// Ensure a page that lies wholly below the viewer's min seq answers HISTORY_UNAVAILABLE with
// the min seq, rather than an empty page a client would read as the end of history.
func TestPageBelowTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   im.SeqState
		q    history.PageQuery
	}{
		{"beforeSeq at the min seq", im.SeqState{MaxSeq: 120, MinSeq: 101}, history.PageQuery{BeforeSeq: ptr(int64(101))}},
		{"beforeSeq below the min seq", im.SeqState{MaxSeq: 120, UserMinSeq: 101}, history.PageQuery{BeforeSeq: ptr(int64(50))}},
		{"both bounds below the min seq", im.SeqState{MaxSeq: 120, MinSeq: 101}, history.PageQuery{AfterSeq: ptr(int64(2)), BeforeSeq: ptr(int64(5))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := &memChunks{}
			_, err := reader(chunks, tc.st).Page(context.Background(), conv, tc.q)
			var gone *im.HistoryUnavailableError
			if !errors.As(err, &gone) || im.ErrorCode(err) != im.EHISTORY || gone.MinSeq != 101 {
				t.Fatalf("err = %v, want history unavailable from 101", err)
			}
			if len(chunks.calls) != 0 {
				t.Fatalf("chunks read: %v", chunks.calls)
			}
		})
	}
}

// Ensure bad page arguments are refused with their codes before the state is read.
func TestPageRefusesBadBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    history.PageQuery
		code string
	}{
		{"limit 0", history.PageQuery{Limit: ptr(0)}, im.EINVALID},
		{"negative limit", history.PageQuery{Limit: ptr(-1)}, im.EINVALID},
		{"limit above the bound", history.PageQuery{Limit: ptr(im.MaxHistoryLimit + 1)}, im.ELIMIT},
		{"beforeSeq 0", history.PageQuery{BeforeSeq: ptr(int64(0))}, im.EINVALID},
		{"negative afterSeq", history.PageQuery{AfterSeq: ptr(int64(-3))}, im.EINVALID},
		{"afterSeq above the largest seq", history.PageQuery{AfterSeq: ptr(im.MaxSeq + 1)}, im.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := history.Reader{Viewer: "bob", Chunks: &memChunks{}, States: memStates{err: errors.New("state was read")}}
			if _, err := r.Page(context.Background(), conv, tc.q); im.ErrorCode(err) != tc.code {
				t.Fatalf("code %q (%v), want %q", im.ErrorCode(err), err, tc.code)
			}
		})
	}
}

// Ensure the largest page over three chunks asks the chunk source once, for those three.
func TestPageAcrossChunksAsksOnce(t *testing.T) {
	chunks := &memChunks{}
	chunks.putMessages(conv, 1, 260)
	p, err := reader(chunks, im.SeqState{MaxSeq: 260}).Page(context.Background(), conv, history.PageQuery{Limit: ptr(im.MaxHistoryLimit)})
	if err != nil || len(p.Messages) != im.MaxHistoryLimit {
		t.Fatalf("%d messages, %v", len(p.Messages), err)
	}
	if len(chunks.calls) != 1 || len(chunks.calls[0]) != 3 {
		t.Fatalf("calls %v, want one call for 3 chunks", chunks.calls)
	}
}
