package cache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cache"
)

// Ensure a discard deletes exactly the keys of the Cache's prefix that describe a store, on
// every master, keeps the rest (rate buckets, persisted queries, live instances, other
// prefixes), records the new identity, and does nothing while another instance holds its lock.
func TestDiscardStoreState(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		var store, kept []string
		for i := range 40 { // spread over the masters
			store = append(store, fmt.Sprintf("t:{si_a_%d}:seqstate", i), fmt.Sprintf("t:{si_a_%d}:chunk:0", i),
				fmt.Sprintf("t:{u:u%d}:log", i), fmt.Sprintf("t:{sg_g%d}:members", i)) // the last: a kind added later
			kept = append(kept, fmt.Sprintf("t:{u:u%d}:rate", i), fmt.Sprintf("t:{u:u%d}:apq", i),
				fmt.Sprintf("other:{si_a_%d}:seqstate", i))
		}
		kept = append(kept, "t:{a:10.0.0.1}:rate", "t:apq:0123", "t:instance:abc", "t:followed")
		for _, k := range append(slices.Clone(store), kept...) {
			if err := e.rdb.Set(e.ctx, k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		id := cache.StoreIdentity{Token: "store-b", Clock: 7, Stamp: "s7"}

		if err := e.rdb.Set(e.ctx, "t:storeid:discard", "another instance", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if done, n, err := e.cache.DiscardStoreState(e.ctx, id); err != nil || done || n != 0 {
			t.Fatalf("discard while another instance holds the lock: done %v, %d deleted, %v", done, n, err)
		}
		if err := e.rdb.Del(e.ctx, "t:storeid:discard").Err(); err != nil {
			t.Fatal(err)
		}

		done, n, err := e.cache.DiscardStoreState(e.ctx, id)
		if err != nil || !done || n != len(store) {
			t.Fatalf("discard: done %v, %d deleted, %v; want done, %d deleted", done, n, err, len(store))
		}
		for _, k := range store {
			if e.rdb.Exists(e.ctx, k).Val() != 0 {
				t.Errorf("%s describes a store and was kept", k)
			}
		}
		for _, k := range kept {
			if e.rdb.Exists(e.ctx, k).Val() != 1 {
				t.Errorf("%s describes no store and was deleted", k)
			}
		}
		if got, err := e.cache.RecordStoreIdentity(e.ctx, cache.StoreIdentity{}); err != nil || got != id {
			t.Errorf("identity after the discard: %+v, %v; want %+v", got, err, id)
		}
		if e.rdb.Exists(e.ctx, "t:storeid:discard").Val() != 0 {
			t.Error("the discard left its lock")
		}
	})
}

// Ensure Redis keeps the later of its identity and a recorded one, and keeps its own when the
// recorded one is another store's or the same step with another stamp.
func TestRecordStoreIdentity(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		a5 := cache.StoreIdentity{Token: "a", Clock: 5, Stamp: "x"}
		for _, tc := range []struct {
			record, want cache.StoreIdentity
		}{
			{cache.StoreIdentity{}, cache.StoreIdentity{}}, // none recorded: read only
			{a5, a5}, // adopted
			{cache.StoreIdentity{Token: "a", Clock: 4, Stamp: "y"}, a5},     // earlier: kept
			{cache.StoreIdentity{Token: "a", Clock: 5, Stamp: "other"}, a5}, // same step, another stamp
			{cache.StoreIdentity{Token: "b", Clock: 9, Stamp: "z"}, a5},     // another store
			{cache.StoreIdentity{Token: "a", Clock: 6, Stamp: "w"}, cache.StoreIdentity{Token: "a", Clock: 6, Stamp: "w"}},
		} {
			if got, err := e.cache.RecordStoreIdentity(e.ctx, tc.record); err != nil || got != tc.want {
				t.Errorf("record %+v: %+v, %v; want %+v", tc.record, got, err, tc.want)
			}
		}
	})
}

// Ensure that while the store's state is held, commands on it fail at once (refusing) or wait
// for the hold to end (checking), and every other command passes.
func TestStoreStateHold(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		e.cache.HoldStoreState(true)
		if _, _, err := e.cache.AllocSeqs(e.ctx, "si_a_b", 1, "tok"); !errors.Is(err, cache.ErrStoreStateHeld) {
			t.Errorf("allocation while refused: %v, want ErrStoreStateHeld", err)
		}
		if err := e.cache.MarkAlive(e.ctx, "me", time.Second); err != nil {
			t.Errorf("a key that describes no store while refused: %v", err)
		}

		e.cache.HoldStoreState(false)
		answered := make(chan error, 1)
		go func() {
			_, _, err := e.cache.AllocSeqs(e.ctx, "si_a_b", 1, "tok")
			answered <- err
		}()
		select {
		case err := <-answered:
			t.Fatalf("allocation answered while being checked: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		e.cache.ServeStoreState()
		select {
		case err := <-answered:
			if err != nil {
				t.Errorf("allocation after the hold: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("allocation still waits after the hold ended")
		}
		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		defer cancel()
		if _, _, err := e.cache.AllocSeqs(ctx, "si_a_b", 1, "tok"); err != nil {
			t.Errorf("allocation once served: %v", err)
		}
	})
}
