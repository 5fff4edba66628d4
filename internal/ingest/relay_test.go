package ingest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure the relay takes the intents an import left (its writer stopped after storing each
// batch of 400 messages over 40 conversations) at most 1,000 messages a look, so each look is
// bounded work on the store, and that the looks finish them all: every conversation's max seq
// shows its messages.
func TestRelayTakesLeftImportIntentsInBoundedLooks(t *testing.T) {
	e := open(t)
	ledger := imsync.NewLedger(e.store, e.cache, imsync.Options{IntentHandoff: time.Millisecond, Fault: func(step string) error {
		if step == "store" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	dying := ingest.New(e.store, e.cache, ledger, ingest.Options{})
	const batches, convs, per = 4, 40, 10
	for b := range batches {
		var msgs []*im.Message
		for c := range convs {
			peer := fmt.Sprintf("b%dc%02d", b, c)
			for i := range per {
				msgs = append(msgs, &im.Message{SendID: peer, RecvID: "alice", ContentType: 101, Content: "imported",
					ClientMsgID: fmt.Sprintf("%s-%d", peer, i)})
			}
		}
		if _, err := dying.Ingest(e.ctx, msgs); !errors.Is(err, imsync.ErrWriterStopped) {
			t.Fatalf("batch %d: the writer did not stop: %v", b, err)
		}
	}
	time.Sleep(10 * time.Millisecond) // past the intents' handoff
	// A look may take its time on a loaded test machine: the bound under test is its size.
	relay := ingest.NewRelay(e.in, ingest.RelayOptions{MaxMessages: 1000, Retry: time.Minute})
	for look, want := range []int{2, 2, 0} {
		n, err := relay.RunOnce(e.ctx)
		if err != nil {
			t.Fatalf("look %d: %v", look, err)
		}
		if n != want {
			t.Errorf("look %d finished %d intents of 400 messages, want %d", look, n, want)
		}
	}
	for b := range batches {
		var conv []string
		for c := range convs {
			id, _ := im.SingleConversationID(fmt.Sprintf("b%dc%02d", b, c), "alice")
			conv = append(conv, id)
		}
		seqs, err := e.store.FindConversationSeqs(e.ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range conv {
			if seqs[id].MaxSeq != per {
				t.Fatalf("%s: max seq %d after the relay, want %d", id, seqs[id].MaxSeq, per)
			}
		}
	}
}
