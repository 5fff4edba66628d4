package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/im"
)

// Ensure concurrent misses of one chunk at one version cost one MongoDB read, while another
// version, no version, or a shared read that failed each get a read of their own.
func TestSharedChunkReads(t *testing.T) {
	ctx := context.Background()
	const conv = "si_alice_bob"
	doc := im.ChunkDocID(conv, 0)
	var finds atomic.Int32
	var hold atomic.Bool
	release := make(chan struct{})
	// A store that counts its reads and, while hold is set, keeps each read until release
	// closes or its reader's context ends (then fails it, as a driver does).
	store := storeFunc(func(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
		finds.Add(1)
		if hold.Load() {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, im.Unavailable("message store", ctx.Err())
			}
		}
		out := make([]*im.Chunk, len(docIDs))
		for i, id := range docIDs {
			out[i] = im.NewChunk(id)
			out[i].Slots[0].Msg = &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: "c1", ContentType: 101, Content: "hello", Seq: 1, SendTime: 1}
		}
		return out, nil
	})
	var reads sharedReads
	type result struct {
		chunks []*im.Chunk
		err    error
	}
	read := func(ctx context.Context, version string, out chan<- result) {
		c, err := reads.find(ctx, store, []string{doc}, []string{version})
		out <- result{c, err}
	}
	waitFinds := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for finds.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d chunk finds sent, want %d", finds.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	check := func(what string, r result) {
		t.Helper()
		if r.err != nil || len(r.chunks) != 1 || r.chunks[0] == nil || r.chunks[0].Slots[0].Msg == nil || r.chunks[0].Slots[0].Msg.Content != "hello" {
			t.Fatalf("%s: %+v", what, r)
		}
	}

	// Five readers at version 7 and one at version 8, the first read held back until all
	// have arrived.
	hold.Store(true)
	out := make(chan result, 6)
	go read(ctx, "7", out)
	waitFinds(1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); read(ctx, "7", out) }()
	}
	go read(ctx, "8", out)
	waitFinds(2)
	time.Sleep(50 * time.Millisecond) // the four joiners reach the read under way
	close(release)
	for i := range 6 {
		check("reader "+string(rune('1'+i)), <-out)
	}
	wg.Wait()
	if n := finds.Load(); n != 2 {
		t.Fatalf("six readers at two versions sent %d chunk finds, want 2", n)
	}

	// Without a version nothing is shared.
	finds.Store(0)
	hold.Store(false)
	var two sync.WaitGroup
	for range 2 {
		two.Add(1)
		go func() { defer two.Done(); read(ctx, "", out) }()
	}
	two.Wait()
	check("unversioned 1", <-out)
	check("unversioned 2", <-out)
	if n := finds.Load(); n != 2 {
		t.Fatalf("two readers without a version sent %d chunk finds, want 2", n)
	}

	// A shared read that fails (its reader gave up) is read again by the one who joined it.
	finds.Store(0)
	release = make(chan struct{})
	hold.Store(true)
	leaderCtx, cancel := context.WithCancel(ctx)
	leaderOut := make(chan result, 1)
	go read(leaderCtx, "9", leaderOut)
	waitFinds(1)
	joinerOut := make(chan result, 1)
	go read(ctx, "9", joinerOut)
	time.Sleep(50 * time.Millisecond)
	hold.Store(false)
	cancel()
	if r := <-leaderOut; r.err == nil {
		t.Fatalf("the reader whose context ended got %+v, want an error", r)
	}
	check("joiner of a failed read", <-joinerOut)
	if n := finds.Load(); n != 2 {
		t.Fatalf("a failed shared read and its retry sent %d chunk finds, want 2", n)
	}
}

// storeFunc lets a function be a ChunkFinder.
type storeFunc func(ctx context.Context, docIDs []string) ([]*im.Chunk, error)

func (f storeFunc) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	return f(ctx, docIDs)
}
