package sync_test

import (
	"context"
	"sort"
	gosync "sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	imsync "github.com/msggate/msggate/internal/sync"
)

// newLedgers returns n ledgers sharing one MongoDB database and one Redis, as n gateway
// instances would, with a small block size so that tests cross many block refills.
func newLedgers(t *testing.T, n int) ([]*imsync.Ledger, *chunkstore.Store, *testenv.RedisServer) {
	t.Helper()
	store, err := chunkstore.Open(context.Background(), testenv.Mongo(t).Connect(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	rs := testenv.Redis(t)
	var out []*imsync.Ledger
	for i := 0; i < n; i++ {
		rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		out = append(out, imsync.NewLedger(store, cache.New(rdb, cache.Options{}), imsync.Options{BlockSize: 7}))
	}
	return out, store, rs
}

// Ensure two instances allocating concurrently hand out every seq exactly once, with no gap.
func TestAllocateAcrossInstances(t *testing.T) {
	ledgers, _, _ := newLedgers(t, 2)
	const perWorker, workers = 20, 4
	var mu gosync.Mutex
	var got []int64
	var wg gosync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(l *imsync.Ledger) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				n := int64(1 + i%3)
				first, err := l.Allocate(context.Background(), "sg_g", n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for s := first; s < first+n; s++ {
					got = append(got, s)
				}
				mu.Unlock()
			}
		}(ledgers[w%2])
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("seq #%d is %d: seqs must be 1..%d, each once", i, s, len(got))
		}
	}
}

// Ensure that after Redis loses its keys the allocator resumes right after the highest stored
// seq, not after the reserved block: no gap, no inflated max seq.
func TestAllocateAfterRedisLoss(t *testing.T) {
	ledgers, store, rs := newLedgers(t, 1)
	ctx := context.Background()
	l := ledgers[0]
	first, err := l.Allocate(ctx, "si_a_b", 3)
	if err != nil || first != 1 {
		t.Fatalf("first allocation: %d, %v", first, err)
	}
	// Seqs 1..3 were stored; the block reserved in MongoDB reaches well beyond.
	if err := store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{"si_a_b": {Seq: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.FlushAll(); err != nil {
		t.Fatal(err)
	}
	next, err := l.Allocate(ctx, "si_a_b", 1)
	if err != nil || next != 4 {
		t.Fatalf("after the flush: %d, %v; want 4", next, err)
	}
	st, err := l.States(ctx, "a", []string{"si_a_b"})
	if err != nil || st[0].MaxSeq != 3 {
		t.Fatalf("max seq after the flush: %+v, %v; want 3 (stored messages only)", st, err)
	}
}
