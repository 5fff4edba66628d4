package graph

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a fetch that remembers its batches and answers each key doubled.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	fail    error
}

func (r *recorder) fetch(_ context.Context, keys []int) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(keys))
	if r.fail != nil {
		return nil, r.fail
	}
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = 2 * k
	}
	return out, nil
}

// Ensure a lone caller's batch goes once no other key joins it, long before Wait.
func TestBatcherLoneCallerDoesNotWaitOutTheTimer(t *testing.T) {
	var r recorder
	b := newBatcher(LoaderOptions{Wait: time.Minute, Quiet: time.Millisecond, MaxBatch: 10}, "t", r.fetch)
	done := make(chan int)
	go func() {
		v, err := b.Load(context.Background(), 21)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	select {
	case v := <-done:
		if v != 42 {
			t.Fatalf("got %d, want 42", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the batch waited for the one-minute timer although no other key came")
	}
}

// Ensure keys asked concurrently share one batch, repeated keys are fetched once, answers are
// kept for the request, and MaxBatch splits a batch.
func TestBatcherBatchesAndRemembers(t *testing.T) {
	var r recorder
	b := newBatcher(LoaderOptions{Wait: 10 * time.Second, Quiet: 200 * time.Millisecond, MaxBatch: 4}, "t", r.fetch)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, k := range []int{1, 2, 3, 2, 1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := b.Load(ctx, k); err != nil || v != 2*k {
				t.Errorf("Load(%d) = %d, %v", k, v, err)
			}
		}()
	}
	wg.Wait()
	if len(r.batches) != 1 || len(r.batches[0]) != 3 {
		t.Fatalf("batches %v, want one of the three distinct keys", r.batches)
	}
	if v, err := b.Load(ctx, 3); err != nil || v != 6 || len(r.batches) != 1 {
		t.Fatalf("a key asked again: %d, %v, batches %v", v, err, r.batches)
	}
	vals, err := b.LoadMany(ctx, []int{10, 11, 12, 13, 14, 15})
	if err != nil || !slices.Equal(vals, []int{20, 22, 24, 26, 28, 30}) {
		t.Fatalf("LoadMany = %v, %v", vals, err)
	}
	if got := r.batches[1:]; len(got) != 2 || len(got[0]) != 4 || len(got[1]) != 2 {
		t.Fatalf("six keys with MaxBatch 4: batches %v", got)
	}
	b.Prime(20, 7)
	b.Prime(10, 7) // asked already: kept
	b.Replace(11, 7)
	for k, want := range map[int]int{20: 7, 10: 20, 11: 7} {
		if v, _ := b.Load(ctx, k); v != want {
			t.Errorf("Load(%d) = %d, want %d", k, v, want)
		}
	}
}

// Ensure a failed or panicking fetch fails every key of its batch, and a caller whose request
// ends stops waiting.
func TestBatcherFailures(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("store down")
	r := recorder{fail: boom}
	b := newBatcher(LoaderOptions{Wait: time.Second, Quiet: time.Millisecond, MaxBatch: 10}, "t", r.fetch)
	if _, err := b.LoadMany(ctx, []int{1, 2}); !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	short := newBatcher(LoaderOptions{Wait: time.Second, Quiet: time.Millisecond, MaxBatch: 10}, "t",
		func(context.Context, []int) ([]int, error) { return []int{1}, nil })
	if _, err := short.LoadMany(ctx, []int{1, 2}); err == nil {
		t.Fatal("a fetch that answered one of two keys was taken as an answer")
	}
	panicky := newBatcher(LoaderOptions{Wait: time.Second, Quiet: time.Millisecond, MaxBatch: 10}, "t",
		func(context.Context, []int) ([]int, error) { panic("bug") })
	if _, err := panicky.Load(ctx, 1); err == nil {
		t.Fatal("a panicking fetch answered without an error")
	}
	release := make(chan struct{})
	defer close(release)
	stuck := newBatcher(LoaderOptions{Wait: time.Second, Quiet: time.Millisecond, MaxBatch: 10}, "t",
		func(context.Context, []int) ([]int, error) { <-release; return []int{0}, nil })
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := stuck.Load(cctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the request's deadline", err)
	}
}
