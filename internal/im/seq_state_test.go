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
