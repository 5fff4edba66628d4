package im

import (
	"reflect"
	"testing"
)

func TestByActivity(t *testing.T) {
	got := ByActivity([]SeqState{
		{ConversationID: "si_a_b", MaxSeq: 3, LastTime: 10},
		{ConversationID: "n_a", MaxSeq: 0, LastTime: 99}, // no messages: not listed
		{ConversationID: "sg_g", MaxSeq: 1, LastTime: 20},
		{ConversationID: "si_a_c", MaxSeq: 7, LastTime: 10}, // same time: by ID
	})
	var ids []string
	for _, st := range got {
		ids = append(ids, st.ConversationID)
	}
	if want := []string{"sg_g", "si_a_b", "si_a_c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("order %v, want %v", ids, want)
	}
}

func TestSeqStateWindowAndUnread(t *testing.T) {
	for _, c := range []struct {
		st          SeqState
		min, unread int64
	}{
		{SeqState{MaxSeq: 10, ReadSeq: 4}, 1, 6},
		{SeqState{MaxSeq: 10, ReadSeq: 4, MinSeq: 8}, 8, 3},
		{SeqState{MaxSeq: 10, ReadSeq: 9, UserMinSeq: 6, MinSeq: 3}, 6, 1},
		{SeqState{MaxSeq: 10, ReadSeq: 12}, 1, 0},
	} {
		if got := c.st.VisibleMin(); got != c.min {
			t.Errorf("%+v: VisibleMin %d, want %d", c.st, got, c.min)
		}
		if got := c.st.Unread(); got != c.unread {
			t.Errorf("%+v: Unread %d, want %d", c.st, got, c.unread)
		}
	}
}

func TestPageAfter(t *testing.T) {
	list := ByActivity([]SeqState{
		{ConversationID: "si_a_b", MaxSeq: 1, LastTime: 30},
		{ConversationID: "si_a_c", MaxSeq: 1, LastTime: 20},
		{ConversationID: "si_a_d", MaxSeq: 1, LastTime: 20},
		{ConversationID: "si_a_e", MaxSeq: 1, LastTime: 10},
	})
	ids := func(p ConversationPage) []string {
		var out []string
		for _, st := range p.States {
			out = append(out, st.ConversationID)
		}
		return out
	}
	first := PageAfter(list, nil, 2)
	if got := ids(first); !reflect.DeepEqual(got, []string{"si_a_b", "si_a_c"}) || !first.HasMore ||
		first.End != (ListPosition{Time: 20, ConversationID: "si_a_c"}) {
		t.Fatalf("first page %v, end %+v, more %v", got, first.End, first.HasMore)
	}
	second := PageAfter(list, &first.End, 2)
	if got := ids(second); !reflect.DeepEqual(got, []string{"si_a_d", "si_a_e"}) || second.HasMore {
		t.Fatalf("second page %v, more %v (the tie at 20 continues by ID)", got, second.HasMore)
	}
	// A cursor whose conversation moved since still marks its place.
	gone := PageAfter(list, &ListPosition{Time: 25, ConversationID: "si_a_z"}, 10)
	if got := ids(gone); !reflect.DeepEqual(got, []string{"si_a_c", "si_a_d", "si_a_e"}) {
		t.Fatalf("page after a moved cursor %v", got)
	}
	if last := PageAfter(list, &second.End, 2); len(last.States) != 0 || last.HasMore || last.End != (ListPosition{}) {
		t.Fatalf("page past the end %+v", last)
	}
}
