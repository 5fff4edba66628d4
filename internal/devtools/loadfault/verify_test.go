package loadfault

import (
	"context"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// Ensure the store check tells each way a send can go wrong: an acknowledged send missing, one
// stored with other content, one stored at two seqs, and an unanswered one stored once (fine).
func TestVerifyStoreFindsLostAndDuplicatedSends(t *testing.T) {
	ctx := context.Background()
	m := testenv.Mongo(t)
	store, err := chunkstore.Connect(ctx, chunkstore.Options{URI: m.URI(), Database: m.Database(), SoleWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	conv := &conversation{id: "si_alice_bob", members: []string{"alice", "bob"}}
	stored := []*im.Message{
		{SendID: "alice", RecvID: "bob", ClientMsgID: "ok", Content: "one", Seq: 1},
		{SendID: "alice", RecvID: "bob", ClientMsgID: "changed", Content: "not what was sent", Seq: 2},
		{SendID: "alice", RecvID: "bob", ClientMsgID: "twice", Content: "three", Seq: 3},
		{SendID: "alice", RecvID: "bob", ClientMsgID: "twice", Content: "three", Seq: 4},
		{SendID: "alice", RecvID: "bob", ClientMsgID: "unanswered", Content: "five", Seq: 5},
	}
	if _, err := store.WriteMessages(ctx, conv.id, stored); err != nil {
		t.Fatal(err)
	}
	if err := store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv.id: {Seq: 5, Time: 1}}); err != nil {
		t.Fatal(err)
	}
	sends := newSendLedger()
	add := func(id, content string, seq int64) {
		s := &sendRecord{conv: conv, sender: "alice", clientMsgID: id, content: content}
		sends.add(s)
		if seq > 0 {
			sends.ack(s, seq)
		}
	}
	add("ok", "one", 1)
	add("changed", "two", 2)
	add("twice", "three", 3)
	add("unanswered", "five", 0)
	add("lost", "six", 6)
	rec := newRecorder()
	f, err := verifyStore(ctx, store, []*conversation{conv}, sends, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := SendFigures{Attempted: 5, Acknowledged: 4, Unacknowledged: 1, StoredUnanswered: 1, Stored: 2, Lost: 2, Duplicated: 1}
	if f != want {
		t.Errorf("figures %+v, want %+v", f, want)
	}
	all := strings.Join(rec.violations, "\n")
	for _, needle := range []string{"twice is stored 2 times", "changed, acknowledged at seq 2, is stored at seq 2 by alice with \"not what was sent\"", "lost, acknowledged at seq 6, is not stored"} {
		if !strings.Contains(all, needle) {
			t.Errorf("violations %q do not name %q", all, needle)
		}
	}
}
