package im_test

import (
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

func TestSingleConversationIDIsSorted(t *testing.T) {
	ab, err := im.SingleConversationID("bob", "alice")
	if err != nil || ab != "si_alice_bob" {
		t.Fatalf("got %q, %v", ab, err)
	}
	c, err := im.ParseConversationID(ab)
	if err != nil || c.Kind != im.SingleChat || c.Peer("alice") != "bob" || c.Peer("eve") != "" {
		t.Fatalf("parse %+v, %v", c, err)
	}
}

func TestParseConversationID(t *testing.T) {
	ok := map[string]im.ConversationKind{
		"si_a_b":   im.SingleChat,
		"sg_team1": im.GroupChat,
		"n_alice":  im.UserNotification,
		"n_sg_g1":  im.GroupNotification,
	}
	for id, kind := range ok {
		c, err := im.ParseConversationID(id)
		if err != nil || c.Kind != kind {
			t.Errorf("ParseConversationID(%q) = %+v, %v", id, c, err)
		}
	}
	for _, id := range []string{
		"", "x_a", "si_", "si_a", "si_b_a", "si_a_a", "si_a_b_c", "sg_", "sg_a:1", "n_",
		"si_a b_c", "sg_" + strings.Repeat("g", im.MaxIDLength+1), "n_é",
	} {
		if _, err := im.ParseConversationID(id); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("ParseConversationID(%q) err=%v, want EINVALID", id, err)
		}
	}
}

func TestUnread(t *testing.T) {
	for _, tc := range []struct{ max, read, userMin, want int64 }{
		{10, 0, 0, 10},
		{10, 4, 0, 6},
		{10, 12, 0, 0}, // never negative
		{10, 2, 11, 0}, // cleared: userMinSeq past maxSeq
		{15, 2, 11, 5}, // cleared at 10, five new since
		{0, 0, 0, 0},
	} {
		if got := im.Unread(tc.max, tc.read, tc.userMin); got != tc.want {
			t.Errorf("Unread(%d,%d,%d)=%d, want %d", tc.max, tc.read, tc.userMin, got, tc.want)
		}
	}
}
