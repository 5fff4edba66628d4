package cache_test

import (
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure ChunksVersions gives a conversation without a chunks version one and then answers it
// unchanged, on every instance, until a chunk of the conversation is invalidated, which gives
// a new one to that conversation alone; and that it costs one round trip once versions exist.
func TestChunksVersions(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		convs := []string{"si_a_b", "sg_team"}
		first, err := e.cache.ChunksVersions(e.ctx, convs)
		if err != nil {
			t.Fatal(err)
		}
		if first[0] == "" || first[1] == "" {
			t.Fatalf("versions %q: a conversation without one was given none", first)
		}
		other := newEnv(t, e.connect).cache // another instance
		e.trips.Take()
		again, err := other.ChunksVersions(e.ctx, convs)
		if err != nil || again[0] != first[0] || again[1] != first[1] {
			t.Fatalf("read again on another instance: %q, %v; want %q", again, err, first)
		}
		if n := len(e.trips.Take()); n != 0 {
			t.Errorf("the first instance's client made %d round trips for the second's read", n)
		}

		if err := e.cache.InvalidateChunks(e.ctx, []string{im.DocID("si_a_b", 7)}); err != nil {
			t.Fatal(err)
		}
		e.trips.Take()
		after, err := e.cache.ChunksVersions(e.ctx, convs)
		if err != nil {
			t.Fatal(err)
		}
		if after[0] == first[0] || after[0] == "" {
			t.Errorf("after a chunk of si_a_b was invalidated its version is %q, was %q: want a new one", after[0], first[0])
		}
		if after[1] != first[1] {
			t.Errorf("sg_team's version moved from %q to %q, though none of its chunks changed", first[1], after[1])
		}
		if n := len(e.trips.Take()); n != 1 {
			t.Errorf("%d round trips to read versions that exist, want 1", n)
		}

		e.flushAll(t)
		lost, err := e.cache.ChunksVersions(e.ctx, convs)
		if err != nil || lost[0] == "" || lost[0] == after[0] {
			t.Errorf("after Redis lost its keys: %q, %v; want a version, not the one before", lost, err)
		}
	})
}
