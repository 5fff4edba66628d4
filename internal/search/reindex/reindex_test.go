package reindex_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search/bleveindex"
	"github.com/msggate/msggate/internal/search/reindex"
)

// failingStore is a real store whose chunk reads of one conversation fail, as a store that
// goes away (or a run that is interrupted) part-way through a run.
type failingStore struct {
	*chunkstore.Store
	conversationID string
}

var errStoreDown = errors.New("store down")

func (s failingStore) FindChunkRange(ctx context.Context, conversationID string, from, to int64) ([]*im.Chunk, error) {
	if conversationID == s.conversationID {
		return nil, errStoreDown
	}
	return s.Store.FindChunkRange(ctx, conversationID, from, to)
}

// Ensure a run that stops reports only the conversations through its checkpoint, those a
// resumed run skips: counting the ones it had read but not yet written to the index (or
// written only in part) would make the stopped and the resumed run's summaries add up to more
// than the store holds.
func TestStoppedRunReportsItsCheckpoint(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("alice", "bob", "", 30)
	g.Send("alice", "carol", "", 30)
	g.Send("alice", "dave", "", 5)
	x, err := bleveindex.Open(filepath.Join(t.TempDir(), "index"), bleveindex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	// A batch of 25 writes bob's 30 messages while they are read, and carol's the same, after
	// which bob's conversation is the checkpoint; carol's is finished but never recorded.
	st := failingStore{Store: g.Store, conversationID: "si_alice_dave"}
	var progress []reindex.Summary
	sum, err := reindex.Run(t.Context(), st, x, reindex.Options{Batch: 25, Progress: func(s reindex.Summary) {
		progress = append(progress, s)
	}})
	if !errors.Is(err, errStoreDown) {
		t.Fatalf("run over a failing store: %v", err)
	}
	if sum.Checkpoint != "si_alice_bob" || sum.Conversations != 1 || sum.Messages != 30 || sum.Seqs != 30 {
		t.Errorf("stopped run: %+v, want 1 conversation, 30 messages through si_alice_bob", sum)
	}
	if len(progress) == 0 || progress[len(progress)-1].Messages != sum.Messages {
		t.Errorf("progress %+v, ending elsewhere than the summary %+v", progress, sum)
	}

	resumed, err := reindex.Run(t.Context(), g.Store, x, reindex.Options{After: sum.Checkpoint, Batch: 25})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Conversations != 2 || resumed.Messages != 35 {
		t.Errorf("resumed run: %+v, want the 2 conversations and 35 messages after the checkpoint", resumed)
	}
	if total := sum.Messages + resumed.Messages; total != 65 {
		t.Errorf("the stopped and the resumed run indexed %d messages together, want the 65 stored", total)
	}
}
