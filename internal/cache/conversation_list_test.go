package cache_test

import (
	"slices"
	"testing"
)

// Ensure a user's conversation list is cached with a version: an empty list is cached too,
// changes apply to a cached list in place, and a fill by a reader that looked before a change
// is dropped, whether the list was cached then or not.
func TestConversationList(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		get := func() ([]string, bool, string) {
			t.Helper()
			e.trips.Take()
			l, err := e.cache.GetConversationList(e.ctx, "ann")
			if err != nil {
				t.Fatal(err)
			}
			e.roundTrips(t, "GetConversationList", 1)
			slices.Sort(l.IDs)
			return l.IDs, l.Cached, l.Version
		}
		if _, cached, _ := get(); cached {
			t.Fatal("a list never filled reads as cached")
		}
		// A reader misses, a writer adds a conversation, the reader's fill is dropped.
		_, _, seen := get()
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"ann": {"si_ann_bob"}}, 10); err != nil {
			t.Fatal(err)
		}
		if err := e.cache.FillConversationList(e.ctx, "ann", seen, nil); err != nil {
			t.Fatal(err)
		}
		if _, cached, _ := get(); cached {
			t.Fatal("a fill from before a change was cached")
		}
		// A fresh fill, even of an empty list, is cached.
		_, _, seen = get()
		if err := e.cache.FillConversationList(e.ctx, "ann", seen, []string{}); err != nil {
			t.Fatal(err)
		}
		if ids, cached, _ := get(); !cached || len(ids) != 0 {
			t.Fatalf("empty list: %v cached=%v", ids, cached)
		}
		// Changes apply in place.
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"ann": {"si_ann_bob", "sg_team"}, "bob": {"si_ann_bob"}}, 10); err != nil {
			t.Fatal(err)
		}
		if ids, cached, _ := get(); !cached || !slices.Equal(ids, []string{"sg_team", "si_ann_bob"}) {
			t.Fatalf("after adds: %v cached=%v", ids, cached)
		}
		_, _, seen = get()
		if err := e.cache.RemoveFromConversationLists(e.ctx, "sg_team", []string{"ann"}); err != nil {
			t.Fatal(err)
		}
		if ids, _, _ := get(); !slices.Equal(ids, []string{"si_ann_bob"}) {
			t.Fatalf("after removing sg_team: %v", ids)
		}
		// A late fill with the version from before the removal must not put sg_team back.
		if err := e.cache.FillConversationList(e.ctx, "ann", seen, []string{"sg_team", "si_ann_bob"}); err != nil {
			t.Fatal(err)
		}
		if ids, _, _ := get(); !slices.Equal(ids, []string{"si_ann_bob"}) {
			t.Fatalf("a late fill changed the list: %v", ids)
		}
		// A list that grows past the limit leaves the cache (it is read from MongoDB).
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"ann": {"n_ann", "sg_a", "sg_b"}}, 3); err != nil {
			t.Fatal(err)
		}
		if ids, cached, _ := get(); cached {
			t.Fatalf("a list past its limit stayed cached: %v", ids)
		}
		// bob's list was not cached: the add moved only its version.
		if _, cached, version := get2(t, e, "bob"); cached || version == "" {
			t.Fatalf("bob: cached=%v version=%q", cached, version)
		}
	})
}

func get2(t *testing.T, e *env, user string) ([]string, bool, string) {
	t.Helper()
	l, err := e.cache.GetConversationList(e.ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	return l.IDs, l.Cached, l.Version
}
