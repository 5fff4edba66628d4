package chunkstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
)

// maxUpdatesPerCommand is the contract: no update command carries more statements, whatever
// one call raises. FerretDB holds a connection of its pool of 100 per statement until the
// command ends.
const maxUpdatesPerCommand = 16

// Ensure raising the max seqs and read seqs of 400 conversations whose documents exist (an
// import batch over that many conversations) completes, raises every one, and sends no update
// command of more than maxUpdatesPerCommand statements.
func TestRaiseManyConversationsInBoundedCommands(t *testing.T) {
	var mu sync.Mutex
	largest, updates := 0, 0
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName != "update" {
			return
		}
		// The driver sends the statements as a document sequence, which the event shows as the
		// command's "updates" array.
		n := 0
		if v, err := e.Command.LookupErr("updates"); err == nil {
			if vals, err := v.Array().Values(); err == nil {
				n = len(vals)
			}
		}
		mu.Lock()
		largest, updates = max(largest, n), updates+1
		mu.Unlock()
	}}
	db := testenv.Mongo(t).Connect(t, monitor)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	convs := make([]string, n)
	for i := range convs {
		convs[i] = fmt.Sprintf("si_alice_u%04d", i)
	}
	raise := func(seq int64) {
		t.Helper()
		maxSeqs := map[string]chunkstore.StoredMax{}
		reads := map[chunkstore.UserSeqKey]int64{}
		for _, c := range convs {
			maxSeqs[c] = chunkstore.StoredMax{Seq: seq, Time: 1_700_000_000_000 + seq}
			reads[chunkstore.UserSeqKey{ConversationID: c, UserID: "alice"}] = seq
		}
		if err := store.RaiseMaxSeqs(ctx, maxSeqs); err != nil {
			t.Fatalf("raise max seqs to %d: %v", seq, err)
		}
		if err := store.RaiseReadSeqs(ctx, reads); err != nil {
			t.Fatalf("raise read seqs to %d: %v", seq, err)
		}
	}
	raise(5)  // creates the documents
	raise(10) // updates every one of them: what an import's second batch does
	got, err := store.FindConversationSeqs(ctx, convs)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]chunkstore.UserSeqKey, n)
	for i, c := range convs {
		keys[i] = chunkstore.UserSeqKey{ConversationID: c, UserID: "alice"}
	}
	reads, err := store.FindUserSeqs(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range convs {
		if got[c].MaxSeq != 10 || reads[keys[i]].ReadSeq != 10 {
			t.Fatalf("%s: max seq %d, read seq %d, want 10 and 10", c, got[c].MaxSeq, reads[keys[i]].ReadSeq)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if largest > maxUpdatesPerCommand {
		t.Errorf("an update command carried %d statements, want at most %d", largest, maxUpdatesPerCommand)
	}
	if want := 2 * 2 * n / maxUpdatesPerCommand; updates < want {
		t.Errorf("%d update commands for 2 x 2 x %d documents, want at least %d", updates, n, want)
	}
}
