package im_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure the four quadrants of (IsNotNotification, IsHistory) and the IsSendMsg clone land
// where the seed says.
func TestCategorise(t *testing.T) {
	type want struct {
		conv   string
		stored bool
	}
	for _, tc := range []struct {
		name    string
		options map[string]bool
		want    []want
	}{
		{"default is a stored chat message", nil, []want{{"si_alice_bob", true}}},
		{"chat stored", map[string]bool{im.OptionNotNotification: true, im.OptionHistory: true}, []want{{"si_alice_bob", true}}},
		{"chat transient", map[string]bool{im.OptionNotNotification: true, im.OptionHistory: false}, []want{{"si_alice_bob", false}}},
		{"notification stored", map[string]bool{im.OptionNotNotification: false, im.OptionHistory: true, im.OptionSendMsg: false}, []want{{"n_bob", true}}},
		{"notification transient", map[string]bool{im.OptionNotNotification: false, im.OptionHistory: false, im.OptionSendMsg: false}, []want{{"n_bob", false}}},
		{"notification with a chat clone", map[string]bool{im.OptionNotNotification: false, im.OptionHistory: false, im.OptionSendMsg: true}, []want{{"n_bob", false}, {"si_alice_bob", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &im.Message{SendID: "alice", RecvID: "bob", Content: "hi", Options: tc.options, AtUserIDList: []string{"bob"}}
			got, err := im.Categorise(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d placements, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].ConversationID != w.conv || got[i].Stored != w.stored {
					t.Errorf("placement %d = %s stored=%v, want %s stored=%v", i, got[i].ConversationID, got[i].Stored, w.conv, w.stored)
				}
			}
			if len(got) == 2 {
				clone := got[1].Message
				if clone == m || clone.Options != nil || clone.Content != "hi" {
					t.Errorf("clone must be a copy with default options, got %+v", clone)
				}
				clone.AtUserIDList[0] = "x"
				if m.AtUserIDList[0] != "bob" {
					t.Error("clone shares its mention list with the original")
				}
			}
		})
	}
	if _, err := im.Categorise(&im.Message{SendID: "a"}); im.ErrorCode(err) != im.EINVALID {
		t.Errorf("no receiver: err=%v", err)
	}
	if _, err := im.Categorise(&im.Message{SendID: "a", RecvID: "b", GroupID: "g"}); im.ErrorCode(err) != im.EINVALID {
		t.Errorf("both receivers: err=%v", err)
	}
	got, err := im.Categorise(&im.Message{SendID: "a", GroupID: "g", Options: map[string]bool{im.OptionNotNotification: false, im.OptionSendMsg: false}})
	if err != nil || got[0].ConversationID != "n_sg_g" {
		t.Errorf("group notification: %+v %v", got, err)
	}
}

// Ensure a message as OpenIM exports it (its own option keys, JSON with OpenIM's field names)
// is categorised as OpenIM categorised it: a notification kept in the notification
// conversation, with a chat copy when isSendMsg is not false; a transient chat message.
func TestCategoriseOpenIMOptions(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // conversation:stored
	}{
		{`{"send_id":"sys","recv_id":"bob","content":"x","options":{"isNotNotification":false,"isSendMsg":false}}`, []string{"n_bob:true"}},
		{`{"send_id":"sys","recv_id":"bob","content":"x","options":{"isNotNotification":false}}`, []string{"n_bob:true", "si_bob_sys:true"}},
		{`{"send_id":"alice","recv_id":"bob","content":"typing","options":{"history":false}}`, []string{"si_alice_bob:false"}},
		{`{"send_id":"alice","group_id":"g","content":"x","options":{"isNotNotification":true,"isSendMsg":false,"history":true}}`, []string{"sg_g:true"}},
	} {
		var m im.Message
		if err := json.Unmarshal([]byte(tc.line), &m); err != nil {
			t.Fatal(err)
		}
		got, err := im.Categorise(&m)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		var places []string
		for _, p := range got {
			places = append(places, fmt.Sprintf("%s:%v", p.ConversationID, p.Stored))
		}
		if !slices.Equal(places, tc.want) {
			t.Errorf("%s: placed %v, want %v", tc.line, places, tc.want)
		}
	}
}
