package chunkstore_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/chunkstore"
)

// Ensure the store's identity steps on only from a value the store is at or past: a new store
// gets an identity of its own, every step has a new stamp, and a value of another store, a
// later one (Redis ahead of a restored store), or the same step with another stamp changes
// nothing and is answered with the store's identity.
func TestAdvanceIdentity(t *testing.T) {
	e := open(t)
	first, ok, err := e.store.AdvanceIdentity(e.ctx, chunkstore.StoreIdentity{})
	if err != nil || !ok || first.Token == "" || first.Stamp == "" {
		t.Fatalf("a new store's first step: %+v, %v, %v", first, ok, err)
	}
	next, ok, err := e.store.AdvanceIdentity(e.ctx, first)
	if err != nil || !ok || next.Token != first.Token || next.Clock != first.Clock+1 || next.Stamp == first.Stamp {
		t.Fatalf("a step from the store's own value: %+v, %v, %v (from %+v)", next, ok, err, first)
	}
	if again, ok, err := e.store.AdvanceIdentity(e.ctx, first); err != nil || !ok || again.Clock != next.Clock+1 {
		t.Errorf("a step from an earlier value of this store: %+v, %v, %v", again, ok, err)
	}
	current, _, err := e.store.AdvanceIdentity(e.ctx, chunkstore.StoreIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	for name, seen := range map[string]chunkstore.StoreIdentity{
		"later":           {Token: current.Token, Clock: current.Clock + 1, Stamp: "x"},
		"same, restamped": {Token: current.Token, Clock: current.Clock, Stamp: "another"},
		"another store":   {Token: "another", Clock: 1, Stamp: current.Stamp},
	} {
		got, ok, err := e.store.AdvanceIdentity(e.ctx, seen)
		if err != nil || ok || got != current {
			t.Errorf("%s (%+v): %+v, %v, %v; want the store's %+v unchanged", name, seen, got, ok, err, current)
		}
	}

	// A new store (no identity yet) is not the store of any recorded value.
	if _, err := e.db.Collection(chunkstore.CollectionLayout).DeleteOne(e.ctx, bson.D{{Key: "_id", Value: "identity"}}); err != nil {
		t.Fatal(err)
	}
	fresh, ok, err := e.store.AdvanceIdentity(e.ctx, current)
	if err != nil || ok || fresh.Token == "" || fresh.Token == current.Token {
		t.Errorf("a store without an identity, against a recorded one: %+v, %v, %v; want a new token, not advanced", fresh, ok, err)
	}
}
