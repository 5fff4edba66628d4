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

// Ensure each look of the relay reports the intents past their Due, also beyond what one look
// takes (then counted), how long the oldest has waited, and what it finished: an operator
// watches that backlog shrink to zero (msggate_relay_due_intents).
func TestRelayReportsItsBacklog(t *testing.T) {
	e := open(t)
	ledger := imsync.NewLedger(e.store, e.cache, imsync.Options{IntentHandoff: time.Millisecond, Fault: func(step string) error {
		if step == "store" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	dying := ingest.New(e.store, e.cache, ledger, ingest.Options{})
	const intents, per = 3, 5
	for b := range intents {
		var msgs []*im.Message
		for i := range per {
			msgs = append(msgs, &im.Message{SendID: fmt.Sprintf("left%d", b), RecvID: "alice", ContentType: 101,
				Content: "left", ClientMsgID: fmt.Sprintf("left%d-%d", b, i)})
		}
		if _, err := dying.Ingest(e.ctx, msgs); !errors.Is(err, imsync.ErrWriterStopped) {
			t.Fatalf("batch %d: the writer did not stop: %v", b, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // past the intents' handoff
	var looks []ingest.RelayLook
	relay := ingest.NewRelay(e.in, ingest.RelayOptions{Batch: 2, MaxMessages: per, Retry: time.Minute,
		OnLook: func(l ingest.RelayLook) { looks = append(looks, l) }})
	for range intents + 1 {
		if _, err := relay.RunOnce(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(looks) != intents+1 {
		t.Fatalf("%d looks reported, want %d", len(looks), intents+1)
	}
	for i, l := range looks {
		wantDue, wantFinished := intents-i, 1
		if i == intents {
			wantFinished = 0
		}
		if l.Due != wantDue || l.Finished != wantFinished || l.Err != nil {
			t.Errorf("look %d reported %d due, %d finished, err %v; want %d due, %d finished", i, l.Due, l.Finished, l.Err, wantDue, wantFinished)
		}
		if (l.OldestAge > 0) != (wantDue > 0) || l.OldestAge > time.Minute {
			t.Errorf("look %d: the oldest due intent was recorded %s ago, with %d due", i, l.OldestAge, wantDue)
		}
	}
}
