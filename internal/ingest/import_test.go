package ingest_test

import (
	"fmt"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// importBatch is per messages of each of convs single chats between "imp<k>" and "hub", in
// file order: conversation by conversation, senders alternating.
func importBatch(convs, per int) []*im.Message {
	var out []*im.Message
	for k := range convs {
		for n := range per {
			from, to := fmt.Sprintf("imp%03d", k), "hub"
			if n%2 == 1 {
				from, to = to, from
			}
			out = append(out, &im.Message{SendID: from, RecvID: to, ClientMsgID: fmt.Sprintf("gen-%d-%d", k, n),
				ContentType: 101, Content: fmt.Sprintf("message %d", n), SendTime: int64(1_000_000 + k*per + n)})
		}
	}
	return out
}

// checkSeqs asserts that message n of each conversation of an importBatch is at seq n+1, and
// that nothing lies past the last.
func checkSeqs(t *testing.T, e *env, convs, per int) {
	t.Helper()
	ids := make([]string, convs)
	for k := range ids {
		conv, _ := im.SingleConversationID(fmt.Sprintf("imp%03d", k), "hub")
		ids[k] = im.DocID(conv, 1) // per stays within one chunk
	}
	chunks, err := e.store.FindChunks(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range chunks {
		for n := range per + 1 {
			var slot *im.Slot
			if c != nil {
				slot = c.Slot(int64(n + 1))
			}
			switch {
			case n == per && slot != nil && slot.Msg != nil:
				t.Fatalf("%s: a message past seq %d: %+v", ids[k], per, slot.Msg)
			case n < per && (slot == nil || slot.Msg == nil || slot.Msg.ClientMsgID != fmt.Sprintf("gen-%d-%d", k, n)):
				t.Fatalf("%s seq %d: %+v, want gen-%d-%d", ids[k], n+1, slot, k, n)
			}
		}
	}
}

// Ensure a bulk import's batch of 1,000 messages over 200 new conversations is written in
// chunk and client message ID commands whose number follows the batch's size, not its
// conversations: its 200 chunks in a few inserts, its claims in one, and two client message
// IDs looked up (the driver may split a command), where the send path writes each chunk and
// looks each ID up (issue 31: an import of a million messages took hours).
func TestImportBatchCommandsDoNotGrowWithConversations(t *testing.T) {
	counts := &testenv.MongoCommands{}
	e := openWatched(t, counts.Monitor())
	const convs, per = 200, 5
	res, err := e.in.Import(e.ctx, importBatch(convs, per))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if p := r.Placements[0]; p.Seq != int64(i%per+1) || p.Duplicate {
			t.Fatalf("message %d placed at %+v, want seq %d, new", i, p, i%per+1)
		}
	}
	chunks := counts.Count(chunkstore.CollectionChunks, "insert", "update", "find", "findAndModify")
	keys := counts.Count(chunkstore.CollectionClientMsgKey, "insert", "update", "find", "findAndModify")
	// The send path sends one per chunk (200), and one per client message ID and more (1,001).
	if chunks > 6 || keys > 4 {
		t.Errorf("a batch over %d conversations sent %d chunk commands and %d client message ID commands; want at most 6 and 4",
			convs, chunks, keys)
	}
	checkSeqs(t, e, convs, per)
}

// Ensure an import run again finds every message it stored by its client message ID: nothing
// stored twice, no seq left unused; and a batch that the send path stored in part gets its
// stored messages' seqs back and the others right after them.
func TestImportAgainStoresNothingTwice(t *testing.T) {
	e := open(t)
	const convs, per = 20, 10
	msgs := importBatch(convs, per)
	if _, err := e.in.Import(e.ctx, msgs[:100]); err != nil { // the first ten conversations
		t.Fatal(err)
	}
	var sent []*im.Message
	for i, m := range msgs[100:] {
		if i%per < 4 { // the first four messages of each of the other ten
			sent = append(sent, m)
		}
	}
	e.send(t, sent...)

	res, err := e.in.Import(e.ctx, importBatch(convs, per))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		p := r.Placements[0]
		wantDup := i < 100 || i%per < 4
		if p.Seq != int64(i%per+1) || p.Duplicate != wantDup {
			t.Fatalf("message %d placed at seq %d (duplicate %v), want seq %d (duplicate %v)", i, p.Seq, p.Duplicate, i%per+1, wantDup)
		}
	}
	checkSeqs(t, e, convs, per)
}
