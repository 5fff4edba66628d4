package history

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/im"
)

// findFunc lets a function be a ChunkFinder.
type findFunc func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

func (f findFunc) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	return f(ctx, docIDs)
}

// Ensure Chunks serves from memory what it holds under the version a ref names, reads the rest
// from its store in one call and keeps what it read under its ref's version, and without a
// memory, or for a ref without a version, reads through.
func TestChunksMemoryInFront(t *testing.T) {
	ctx := context.Background()
	var calls [][]string
	store := findFunc(func(_ context.Context, docIDs []string) ([]*im.Chunk, error) {
		calls = append(calls, slices.Clone(docIDs))
		out := make([]*im.Chunk, len(docIDs))
		for i, id := range docIDs {
			if id != "si_a_b:9" { // no such chunk
				out[i] = im.NewChunk(id)
			}
		}
		return out, nil
	})
	held := im.NewChunk("si_a_b:0")
	m := NewChunkMemory(0)
	m.Put("7", held)
	c := &Chunks{Store: store, Memory: m}

	got, err := c.LoadChunks(ctx, []ChunkRef{{"si_a_b:0", "7"}, {"si_a_b:1", "7"}, {"si_a_b:9", "7"}, {"si_a_b:2", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != held || got[1] == nil || got[1].DocID != "si_a_b:1" || got[2] != nil || got[3] == nil || got[3].DocID != "si_a_b:2" {
		t.Fatalf("answer %v", got)
	}
	if len(calls) != 1 || !slices.Equal(calls[0], []string{"si_a_b:1", "si_a_b:9", "si_a_b:2"}) {
		t.Fatalf("store calls %v, want the three misses in one", calls)
	}
	if peek(m, "si_a_b:1", "7") != got[1] || peek(m, "si_a_b:2", "") != nil || m.Stats().Chunks != 2 {
		t.Fatalf("kept %+v: want what was read under a version, and only that", m.Stats())
	}
	if _, all := c.Remembered([]ChunkRef{{"si_a_b:0", "7"}, {"si_a_b:1", "7"}}); !all {
		t.Error("what was read under a version is not remembered")
	}

	calls = nil
	plain := &Chunks{Store: store}
	if got, err := plain.LoadChunks(ctx, []ChunkRef{{"si_a_b:0", "7"}}); err != nil || got[0] == held || got[0] == nil {
		t.Fatalf("without memory: %v %v", got, err)
	}
	if len(calls) != 1 {
		t.Fatalf("without memory, store calls %v", calls)
	}
	if _, all := plain.Remembered([]ChunkRef{{"si_a_b:0", "7"}}); all {
		t.Error("a source without memory remembers nothing")
	}
}

// Ensure concurrent readers that miss the same chunk under the same version share one read of
// the store (when a version moves, every request under way misses at once), that a ref without
// a version or under another version is read apart, and that a shared read that failed is made
// again by the readers that joined it rather than failing them.
func TestChunksShareConcurrentMisses(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var calls [][]string
	release := make(chan struct{})
	fail := true
	store := findFunc(func(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
		mu.Lock()
		calls = append(calls, slices.Clone(docIDs))
		failThis := fail && docIDs[0] == "si_a_b:3" // the first read of it only
		if failThis {
			fail = false
		}
		mu.Unlock()
		<-release
		if failThis {
			return nil, im.Errorf(im.EUNAVAILABLE, "the leader's read failed")
		}
		out := make([]*im.Chunk, len(docIDs))
		for i, id := range docIDs {
			out[i] = im.NewChunk(id)
		}
		return out, nil
	})
	callsNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(calls)
	}
	c := &Chunks{Store: store, Memory: NewChunkMemory(0)}

	const readers = 8
	var wg sync.WaitGroup
	errs := make(chan error, readers+2)
	load := func(ref ChunkRef) {
		defer wg.Done()
		got, err := c.LoadChunks(ctx, []ChunkRef{ref})
		if err == nil && (got[0] == nil || got[0].DocID != ref.DocID) {
			err = fmt.Errorf("%v: got %v", ref, got)
		}
		errs <- err
	}
	wg.Add(1)
	go load(ChunkRef{"si_a_b:1", "7"})
	waitUntil(t, func() bool { return callsNow() == 1 }) // the first reader's read is under way
	wg.Add(readers - 1)
	for range readers - 1 {
		go load(ChunkRef{"si_a_b:1", "7"})
	}
	wg.Add(2)
	go load(ChunkRef{"si_a_b:1", "8"})
	go load(ChunkRef{"si_a_b:1", ""})
	waitUntil(t, func() bool { return callsNow() >= 3 })
	time.Sleep(20 * time.Millisecond) // a reader that did not join would have called by now
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := callsNow(); n != 3 {
		t.Errorf("%d store reads for %d readers of one chunk at one version and two others, want 3: %v", n, readers, calls)
	}

	// A failed shared read: its leader fails, the readers that joined it read again.
	mu.Lock()
	calls, release = nil, make(chan struct{})
	mu.Unlock()
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.LoadChunks(ctx, []ChunkRef{{"si_a_b:3", "7"}})
		leaderErr <- err
	}()
	waitUntil(t, func() bool { return callsNow() == 1 })
	joined := make(chan error, 1)
	go func() {
		got, err := c.LoadChunks(ctx, []ChunkRef{{"si_a_b:3", "7"}})
		if err == nil && got[0] == nil {
			err = fmt.Errorf("got %v", got)
		}
		joined <- err
	}()
	time.Sleep(20 * time.Millisecond) // for it to join the leader's read
	close(release)
	if err := <-leaderErr; im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Errorf("the leader: %v, want its store's failure", err)
	}
	if err := <-joined; err != nil {
		t.Errorf("a reader that joined a failed read: %v, want its own read's answer", err)
	}
	if n := callsNow(); n != 2 {
		t.Errorf("%d store reads, want the failed one and the joined reader's own", n)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
