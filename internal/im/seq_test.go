package im_test

import (
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure the seed's addressing examples hold.
func TestDocIDAndSlotIndex(t *testing.T) {
	for _, tc := range []struct {
		seq   int64
		docID string
		slot  int
	}{
		{1, "si_A_B:0", 0},
		{100, "si_A_B:0", 99},
		{101, "si_A_B:1", 0},
		{250, "si_A_B:2", 49},
	} {
		if got := im.DocID("si_A_B", tc.seq); got != tc.docID {
			t.Errorf("DocID(%d)=%q, want %q", tc.seq, got, tc.docID)
		}
		if got := im.SlotIndex(tc.seq); got != tc.slot {
			t.Errorf("SlotIndex(%d)=%d, want %d", tc.seq, got, tc.slot)
		}
	}
}

// Ensure 90..110 falls into exactly two chunks, in order, with all seqs kept.
func TestGroupSeqsByDocID(t *testing.T) {
	var seqs []int64
	for s := int64(90); s <= 110; s++ {
		seqs = append(seqs, s)
	}
	groups := im.GroupSeqsByDocID("sg_g", seqs)
	if len(groups) != 2 || groups[0].DocID != "sg_g:0" || groups[1].DocID != "sg_g:1" {
		t.Fatalf("groups=%+v", groups)
	}
	if len(groups[0].Seqs) != 11 || len(groups[1].Seqs) != 10 {
		t.Fatalf("group sizes %d, %d", len(groups[0].Seqs), len(groups[1].Seqs))
	}
}

func TestValidateSeq(t *testing.T) {
	for _, s := range []int64{0, -1, im.MaxSeq + 1} {
		if err := im.ValidateSeq(s); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("ValidateSeq(%d)=%v, want EINVALID", s, err)
		}
	}
	if err := im.ValidateSeq(1); err != nil {
		t.Fatal(err)
	}
}

// FuzzSeqAddressing checks the addressing invariants for any valid seq: the chunk's first seq
// plus the slot gives the seq back, the slot is in range, the doc ID parses back, and grouping
// keeps every seq in a group with its own doc ID.
func FuzzSeqAddressing(f *testing.F) {
	for _, s := range []int64{1, 99, 100, 101, 250, im.MaxSeq} {
		f.Add(s, s+1)
	}
	f.Fuzz(func(t *testing.T, a, b int64) {
		for _, seq := range []int64{a, b} {
			if im.ValidateSeq(seq) != nil {
				return
			}
			idx, slot := im.ChunkIndex(seq), im.SlotIndex(seq)
			if slot < 0 || slot >= im.ChunkSize {
				t.Fatalf("slot %d out of range for seq %d", slot, seq)
			}
			if im.FirstSeq(idx)+int64(slot) != seq {
				t.Fatalf("seq %d: chunk %d slot %d do not add up", seq, idx, slot)
			}
			conv, gotIdx, err := im.ParseDocID(im.DocID("si_a_b", seq))
			if err != nil || conv != "si_a_b" || gotIdx != idx {
				t.Fatalf("ParseDocID(DocID(%d)) = %q, %d, %v", seq, conv, gotIdx, err)
			}
		}
		groups := im.GroupSeqsByDocID("c", []int64{a, b})
		n := 0
		for _, g := range groups {
			for _, s := range g.Seqs {
				n++
				if im.DocID("c", s) != g.DocID {
					t.Fatalf("seq %d grouped under %s", s, g.DocID)
				}
			}
		}
		if n != 2 {
			t.Fatalf("grouping kept %d of 2 seqs", n)
		}
		if (im.ChunkIndex(a) == im.ChunkIndex(b)) != (len(groups) == 1) {
			t.Fatalf("seqs %d and %d: %d groups", a, b, len(groups))
		}
	})
}

func TestHistoryPage(t *testing.T) {
	for _, tc := range []struct {
		min, max, before, after int64
		limit                   int
		from, to                int64
	}{
		{1, 250, 0, 0, 50, 201, 250},   // newest page
		{1, 250, 201, 0, 50, 151, 200}, // older page
		{1, 250, 0, 200, 50, 201, 250}, // forward from 200
		{1, 250, 0, 10, 5, 11, 15},     // forward, limited
		{101, 250, 120, 0, 50, 101, 119},
		{1, 0, 0, 0, 50, 1, 0}, // empty conversation
		{1, 10, 0, 10, 50, 11, 10},
	} {
		from, to := im.HistoryPage(tc.min, tc.max, tc.before, tc.after, tc.limit)
		if from != tc.from || to != tc.to {
			t.Errorf("HistoryPage(%+v) = %d..%d, want %d..%d", tc, from, to, tc.from, tc.to)
		}
	}
}

func TestViewSlot(t *testing.T) {
	m := &im.Message{SendID: "a", Content: "secret", Seq: 7}
	if v := im.ViewSlot("c", 7, &im.Slot{Msg: m}, "b"); v.Status != im.StatusOK || v.Message.Content != "secret" {
		t.Errorf("plain: %+v", v)
	}
	if v := im.ViewSlot("c", 7, &im.Slot{Msg: m, DelList: []string{"b"}}, "b"); v.Status != im.StatusDeleted || v.Message.Content != "" {
		t.Errorf("deleted for b: %+v", v)
	}
	if v := im.ViewSlot("c", 7, &im.Slot{Msg: m, DelList: []string{"b"}}, "a"); v.Status != im.StatusOK {
		t.Errorf("deleted for b, seen by a: %+v", v)
	}
	if v := im.ViewSlot("c", 7, &im.Slot{Msg: m, Revoke: &im.Revoke{UserID: "a"}}, "b"); v.Status != im.StatusRevoked || v.Message.Content != "" || v.Revoke.UserID != "a" {
		t.Errorf("revoked: %+v", v)
	}
	if v := im.ViewSlot("c", 8, &im.Slot{}, "b"); v.Status != im.StatusMissing || v.Seq != 8 {
		t.Errorf("empty: %+v", v)
	}
}
