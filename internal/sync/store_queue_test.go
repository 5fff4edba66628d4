package sync

import (
	"context"
	"slices"
	gosync "sync"
	"testing"
	"time"
)

// Ensure a storeQueue gathers the keys asked for while a query runs into the next query,
// reads each key once per query, and never answers a key from a query that started before
// the key was asked for.
func TestStoreQueueGathersWhileAQueryRuns(t *testing.T) {
	ctx := context.Background()
	var mu gosync.Mutex
	var queries [][]string
	version := 0 // what the store holds; moves on while the first query runs
	release := make(chan struct{})
	q := newStoreQueue(func(_ context.Context, keys []string) (map[string]int, error) {
		mu.Lock()
		queries = append(queries, slices.Clone(keys))
		n, v := len(queries), version
		mu.Unlock()
		if n == 1 {
			<-release
		}
		out := map[string]int{}
		for _, k := range keys {
			out[k] = v
		}
		return out, nil
	}, storeWait)
	first := make(chan map[string]int)
	go func() {
		got, err := q.load(ctx, []string{"a"})
		if err != nil {
			t.Error(err)
		}
		first <- got
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		started := len(queries) == 1
		if started {
			version = 1 // a write acknowledged before the next callers ask
		}
		mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first query did not start")
		}
	}
	var wg gosync.WaitGroup
	later := make([]map[string]int, 20)
	for i := range later {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := q.load(ctx, []string{"a", "b"})
			if err != nil {
				t.Error(err)
			}
			later[i] = got
		}()
	}
	time.Sleep(100 * time.Millisecond) // the later callers wait behind the running query
	close(release)
	wg.Wait()
	if got := <-first; got["a"] != 0 {
		t.Errorf("the first caller got %v", got)
	}
	for i, got := range later {
		if got["a"] != 1 || got["b"] != 1 {
			t.Errorf("caller %d got %v, want what the store held after it asked", i, got)
		}
	}
	if len(queries) != 2 || len(queries[1]) != 2 {
		t.Errorf("queries %v, want the running one and one more of each later key once", queries)
	}
}
