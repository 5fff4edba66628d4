package cache_test

import (
	"slices"
	"testing"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
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

// Ensure a list read before is confirmed by its version alone, in one round trip with the
// states, that any change makes the next read take the new list, and that a version Redis lost
// (a restart) never comes back to the one a reader remembers.
func TestConversationListKnownByVersion(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		read := func(known cache.ConversationList, trips int64) cache.ConversationList {
			t.Helper()
			e.trips.Take()
			l, states, err := e.cache.GetConversationListWithStates(e.ctx, "eve", known)
			if err != nil {
				t.Fatal(err)
			}
			e.roundTrips(t, "GetConversationListWithStates", trips)
			if len(known.IDs) > 0 && (len(states.Conversations) != 1 || len(states.Conversations[0]) != len(known.IDs)) {
				t.Fatalf("states %+v for %d known conversations", states, len(known.IDs))
			}
			slices.Sort(l.IDs)
			return l
		}
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"eve": {"si_bob_eve"}}, 10); err != nil {
			t.Fatal(err)
		}
		if err := e.cache.FillConversationList(e.ctx, "eve", read(cache.ConversationList{}, 1).Version, []string{"si_bob_eve"}); err != nil {
			t.Fatal(err)
		}
		known := read(cache.ConversationList{}, 1)
		if !known.Cached || known.Version == "" || !slices.Equal(known.IDs, []string{"si_bob_eve"}) {
			t.Fatalf("filled list: %+v", known)
		}
		if got := read(known, 1); !got.Cached || got.Version != known.Version || !slices.Equal(got.IDs, known.IDs) {
			t.Fatalf("unchanged list read by version: %+v, want %+v", got, known)
		}
		e.trips.Take()
		if _, _, err := e.cache.GetConversationListWithStates(e.ctx, "eve", known); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Matching(e.trips.Take(), "smembers"); n != 0 {
			t.Errorf("an unchanged known list was read again (%d SMEMBERS)", n)
		}

		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"eve": {"sg_club"}}, 10); err != nil {
			t.Fatal(err)
		}
		changed := read(known, 2)
		if !slices.Equal(changed.IDs, []string{"sg_club", "si_bob_eve"}) || changed.Version == known.Version {
			t.Fatalf("after a change: %+v (known at version %s)", changed, known.Version)
		}

		// Redis loses the keys, a change comes: the new version is not the remembered one.
		for _, key := range []string{"t:{u:eve}:convs", "t:{u:eve}:convsv"} {
			if err := e.rdb.Del(e.ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.cache.RemoveFromConversationLists(e.ctx, "sg_club", []string{"eve"}); err != nil {
			t.Fatal(err)
		}
		if got := read(changed, 2); got.Version == changed.Version || got.Version == known.Version || got.Cached {
			t.Fatalf("after the keys were lost and a change: %+v (remembered versions %s, %s)", got, known.Version, changed.Version)
		}
	})
}
