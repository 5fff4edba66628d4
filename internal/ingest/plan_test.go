package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure a batch is split into placements as the seed categorises: a chat message to its
// chat, a transient one published only, a group notification into the group's notification
// conversation plus a stored chat clone; and that the server's fields are stamped on copies,
// never on the caller's messages.
func TestPlanPlacesABatch(t *testing.T) {
	const now = 1_000
	msgs := []*im.Message{
		{SendID: "alice", RecvID: "bob", ClientMsgID: "c1", Content: "hi"},
		{SendID: "alice", RecvID: "bob", Content: "typing", Options: map[string]bool{im.OptionHistory: false}},
		{SendID: "sys", GroupID: "team", Content: "bob joined", Options: map[string]bool{im.OptionNotNotification: false}},
		{SendID: "bob", GroupID: "team", Content: "hello", SendTime: 123},
	}
	results, stored, err := plan(msgs, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range results {
		for _, p := range r.Placements {
			got = append(got, fmt.Sprintf("%d:%s", i, p.ConversationID))
		}
	}
	if want := "0:si_alice_bob 1:si_alice_bob 2:n_sg_team 2:sg_team 3:sg_team"; strings.Join(got, " ") != want {
		t.Fatalf("placements %v, want %s", got, want)
	}
	got = nil
	for _, p := range stored {
		got = append(got, fmt.Sprintf("%d.%d:%s:%v", p.result, p.index, p.conv, p.dedup))
	}
	// The transient message is not stored; only the message with a client ID is deduplicated.
	if want := "0.0:si_alice_bob:true 2.0:n_sg_team:false 2.1:sg_team:false 3.0:sg_team:false"; strings.Join(got, " ") != want {
		t.Fatalf("stored %v, want %s", got, want)
	}
	for _, tc := range []struct {
		p        *placement
		session  int32
		sendTime int64
	}{
		{stored[0], im.SessionSingle, now},
		{stored[1], im.SessionNotification, now},
		{stored[2], im.SessionGroup, now},
		{stored[3], im.SessionGroup, 123},
	} {
		m := tc.p.msg
		if m.SessionType != tc.session || m.SendTime != tc.sendTime || m.CreateTime != now || m.Status != im.StatusSent ||
			m.ServerMsgID == "" || m.ClientMsgID == "" || m.Seq != 0 {
			t.Errorf("%s: stamped %+v", tc.p.conv, m)
		}
	}
	if stored[0].msg.ClientMsgID != "c1" || stored[1].msg.ServerMsgID == stored[2].msg.ServerMsgID {
		t.Errorf("client IDs are kept and server IDs are unique: %+v %+v", stored[0].msg, stored[1].msg)
	}
	if stored[2].msg.Options != nil {
		t.Errorf("the chat clone of a notification carries default options: %v", stored[2].msg.Options)
	}
	if msgs[0].ServerMsgID != "" || msgs[3].SessionType != 0 {
		t.Errorf("the caller's messages were changed: %+v %+v", msgs[0], msgs[3])
	}
}

// Ensure one refused message refuses the whole batch, with the message's own error.
func TestPlanRefusesTheBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  *im.Message
		code string
	}{
		{"content too large", &im.Message{SendID: "alice", RecvID: "bob", Content: strings.Repeat("x", im.MaxContentBytes+1)}, im.ELIMIT},
		{"no receiver", &im.Message{SendID: "alice", Content: "x"}, im.EINVALID},
		{"a bad sender", &im.Message{SendID: "a_b", RecvID: "bob", Content: "x"}, im.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results, stored, err := plan([]*im.Message{{SendID: "alice", RecvID: "bob", Content: "fine"}, tc.bad}, 1)
			if im.ErrorCode(err) != tc.code || results != nil || stored != nil {
				t.Errorf("got %v (%d results, %d stored), want code %s", err, len(results), len(stored), tc.code)
			}
		})
	}
}

func place(conv, clientMsgID string, seq int64) *placement {
	return &placement{conv: conv, dedup: clientMsgID != "", msg: &im.Message{SendID: "bob", ClientMsgID: clientMsgID, Seq: seq}}
}

// Ensure a message sent twice within one batch is stored once: the second copy becomes a retry
// of the first and shares its message, while the same client ID in another conversation or by
// another sender, and messages without a client ID, stay separate.
func TestBatchCopies(t *testing.T) {
	first := place("sg_g", "x", 0)
	copyOf := place("sg_g", "x", 0)
	other := place("sg_h", "x", 0)
	otherSender := place("sg_g", "x", 0)
	otherSender.msg.SendID = "carol"
	noID := place("sg_g", "", 0)
	noID2 := place("sg_g", "", 0)
	firsts, keys := batchCopies([]*placement{first, copyOf, other, otherSender, noID, noID2})
	if !copyOf.retry || copyOf.msg != first.msg {
		t.Errorf("the second copy is not a retry of the first: %+v", copyOf)
	}
	if first.retry || other.retry || otherSender.retry || otherSender.msg == first.msg || noID.retry || noID2.retry || noID.msg == noID2.msg {
		t.Errorf("distinct messages were merged: %+v %+v %+v %+v", first, other, otherSender, noID2)
	}
	want := []chunkstore.ClientMsgKey{{ConversationID: "sg_g", SendID: "bob", ClientMsgID: "x"}, {ConversationID: "sg_h", SendID: "bob", ClientMsgID: "x"},
		{ConversationID: "sg_g", SendID: "carol", ClientMsgID: "x"}}
	if fmt.Sprint(keys) != fmt.Sprint(want) || firsts[want[0]] != first || firsts[want[1]] != other || firsts[want[2]] != otherSender || len(firsts) != 3 {
		t.Errorf("keys to look up %v, want %v", keys, want)
	}
}

func batches(bs []convBatch) string {
	var out []string
	for _, b := range bs {
		var seqs []string
		for _, p := range b.ps {
			seqs = append(seqs, fmt.Sprintf("%d %s", p.msg.Seq, p.msg.ClientMsgID))
		}
		out = append(out, b.conv+"["+strings.Join(seqs, ",")+"]")
	}
	return strings.Join(out, " ")
}

// Ensure seqs are asked for once per conversation, in batch order, for each message that has
// none yet, and once for copies of one message.
func TestNeedingSeqs(t *testing.T) {
	a1, b1, a2, retried := place("sg_a", "1", 0), place("sg_b", "2", 0), place("sg_a", "3", 0), place("sg_a", "4", 7)
	copyOfA1 := &placement{conv: "sg_a", msg: a1.msg, retry: true}
	if got, want := batches(needingSeqs([]*placement{a1, b1, copyOfA1, a2, retried})), "sg_a[0 1,0 3] sg_b[0 2]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Ensure a conversation's placements are written one per seq, retries apart from fresh
// messages (retries are written by reading their chunk first).
func TestByConversationAndSplitRetries(t *testing.T) {
	f1, r5, f2 := place("si_a_b", "f1", 1), place("si_a_b", "r5", 5), place("si_a_b", "f2", 2)
	r5.retry = true
	copyOfF1 := &placement{conv: "si_a_b", msg: f1.msg, retry: true}
	g := place("sg_g", "g", 1)
	bs := byConversation([]*placement{f1, g, r5, copyOfF1, f2})
	if got, want := batches(bs), "si_a_b[1 f1,5 r5,1 f1,2 f2] sg_g[1 g]"; got != want {
		t.Fatalf("grouped %s, want %s", got, want)
	}
	fresh, retries := splitRetries(bs[0].ps)
	if got := batches([]convBatch{{"fresh", fresh}, {"retries", retries}}); got != "fresh[1 f1,2 f2] retries[5 r5]" {
		t.Errorf("split %s", got)
	}
}

// Ensure what is recorded and announced names each stored message once, in seq order per
// conversation, and that only single chats and user notifications get list entries, once each.
func TestStoredMessagesAndListEntries(t *testing.T) {
	mk := func(conv string, seq int64, sender string) *placement {
		return &placement{conv: conv, msg: &im.Message{Seq: seq, SendID: sender, SendTime: seq * 10}}
	}
	two := mk("si_alice_bob", 2, "bob")
	copyOfTwo := &placement{conv: two.conv, msg: two.msg}
	got := storedMessages([]*placement{two, mk("sg_team", 4, "alice"), mk("si_alice_bob", 1, "alice"), copyOfTwo, mk("n_carol", 1, "sys"), mk("n_sg_team", 1, "sys")})
	want := []imsync.StoredMessage{
		{ConversationID: "n_carol", Seq: 1, SendID: "sys", SendTime: 10},
		{ConversationID: "n_sg_team", Seq: 1, SendID: "sys", SendTime: 10},
		{ConversationID: "sg_team", Seq: 4, SendID: "alice", SendTime: 40},
		{ConversationID: "si_alice_bob", Seq: 1, SendID: "alice", SendTime: 10},
		{ConversationID: "si_alice_bob", Seq: 2, SendID: "bob", SendTime: 20},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored messages %v, want %v", got, want)
	}
	var entries []string
	for _, e := range listEntries(got) {
		entries = append(entries, e.UserID+"@"+e.ConversationID)
	}
	if want := "carol@n_carol alice@si_alice_bob bob@si_alice_bob"; strings.Join(entries, " ") != want {
		t.Errorf("list entries %v, want %s", entries, want)
	}
}

// Ensure the send checks decide in the order a client sees them: sizes, then the admin-only
// rule for notifications, then the addressing; and name the chat conversation to authorize.
func TestCheckSend(t *testing.T) {
	note := map[string]bool{im.OptionNotNotification: false}
	for _, tc := range []struct {
		name   string
		sender Sender
		m      im.Message
		conv   string
		code   string
	}{
		{"a chat message", Sender{UserID: "alice"}, im.Message{SendID: "alice", RecvID: "bob"}, "si_alice_bob", ""},
		{"a group message", Sender{UserID: "alice"}, im.Message{SendID: "alice", GroupID: "team"}, "sg_team", ""},
		{"a user's notification", Sender{UserID: "alice"}, im.Message{SendID: "alice", RecvID: "bob", Options: note}, "", im.EFORBIDDEN},
		{"an admin's notification", Sender{UserID: "alice", Admin: true}, im.Message{SendID: "alice", RecvID: "bob", Options: note}, "si_alice_bob", ""},
		{"a user's notification to a bad ID", Sender{UserID: "alice"}, im.Message{SendID: "alice", RecvID: "b_b", Options: note}, "", im.EFORBIDDEN},
		{"a user's oversized notification", Sender{UserID: "alice"}, im.Message{SendID: "alice", RecvID: "bob", Options: note, Ex: strings.Repeat("x", im.MaxExBytes+1)}, "", im.ELIMIT},
		{"a message to oneself", Sender{UserID: "alice"}, im.Message{SendID: "alice", RecvID: "alice"}, "", im.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv, err := checkSend(tc.sender, &tc.m)
			if conv != tc.conv || im.ErrorCode(err) != tc.code {
				t.Errorf("got %q, %v; want %q, code %q", conv, err, tc.conv, tc.code)
			}
		})
	}
}
