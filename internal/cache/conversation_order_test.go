package cache_test

import (
	"slices"
	"testing"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// Ensure a user's conversation order answers pages in the list's order (newest first, ties by
// ID) in one round trip, whatever the cursor: one whose conversation still holds its place,
// or one whose conversation moved since. Sends move conversations forward only, a fill never
// puts back an older time, nor a list that changed since it was read, and groups join and
// leave the order with the list.
func TestConversationOrder(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		page := func(after *im.ListPosition, limit int, guess ...string) (cache.OrderedPage, cache.States) {
			t.Helper()
			e.trips.Take()
			p, st, err := e.cache.GetConversationPage(e.ctx, "ann", after, limit, guess)
			if err != nil {
				t.Fatal(err)
			}
			// A server that did not know the script yet costs one load and one more try.
			if trips := e.trips.Take(); len(trips) != 1 && !(len(trips) == 3 && trips[1][0] == "script load") {
				t.Fatalf("GetConversationPage made round trips %q, want 1", trips)
			}
			return p, st
		}
		ids := func(p cache.OrderedPage) []string {
			var out []string
			for _, e := range p.Entries {
				out = append(out, e.ConversationID)
			}
			return out
		}
		raise := func(conv string, at int64, users ...string) {
			t.Helper()
			if err := e.cache.RaiseStates(e.ctx, []cache.ConversationRaise{{ConversationID: conv, LastTime: &at, Users: users}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		version := func() string {
			t.Helper()
			l, err := e.cache.GetConversationList(e.ctx, "ann")
			if err != nil {
				t.Fatal(err)
			}
			return l.Version
		}
		if p, _ := page(nil, 10); p.Cached {
			t.Fatal("an order never filled reads as cached")
		}
		// A send before the fill is kept over the fill's older time; one that only creates the
		// order does not make it filled.
		raise("si_ann_bob", 50, "ann", "bob")
		if p, _ := page(nil, 10); p.Cached {
			t.Fatal("an order only sends wrote to reads as filled")
		}
		seen := version()
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{"ann": {"sg_team"}}, 10); err != nil {
			t.Fatal(err)
		}
		fill := func(v string) {
			t.Helper()
			err := e.cache.FillConversationOrder(e.ctx, "ann", v, []string{"sg_team", "n_sg_team"}, []cache.OrderEntry{
				{ConversationID: "si_ann_bob", Time: 10}, {ConversationID: "si_ann_dan", Time: 20},
				{ConversationID: "si_ann_cat", Time: 20}, {ConversationID: "si_ann_eve", Time: 20},
				{ConversationID: "n_ann", Time: 5},
			}, 100)
			if err != nil {
				t.Fatal(err)
			}
		}
		fill(seen)
		if p, _ := page(nil, 10); p.Cached {
			t.Fatal("a fill made of a list that changed since was cached")
		}
		fill(version())
		p, _ := page(nil, 10)
		if want := []string{"si_ann_bob", "si_ann_cat", "si_ann_dan", "si_ann_eve", "n_ann"}; !p.Cached || !slices.Equal(ids(p), want) {
			t.Fatalf("order %v cached=%v, want %v", ids(p), p.Cached, want)
		}
		if slices.Sort(p.Groups); !slices.Equal(p.Groups, []string{"n_sg_team", "sg_team"}) {
			t.Fatalf("groups %v", p.Groups)
		}
		if p.Entries[0].Time != 50 || p.Entries[1].Time != 20 || p.Size != 7 {
			t.Fatalf("times %+v, size %d (want 7, the groups too)", p.Entries, p.Size)
		}
		// Pages of two, the cursor inside the tie at 20.
		first, _ := page(nil, 2)
		end := im.ListPosition{Time: first.Entries[1].Time, ConversationID: first.Entries[1].ConversationID}
		second, _ := page(&end, 2)
		if got := ids(second); !slices.Equal(got, []string{"si_ann_dan", "si_ann_eve"}) {
			t.Fatalf("page after %+v: %v", end, got)
		}
		// The cursor's conversation moves forward before the next page is read: the page still
		// starts after its old place, the tie's larger IDs first.
		raise("si_ann_cat", 60, "ann")
		raise("si_ann_bob", 40, "ann") // older than what the order has: no move
		if moved, _ := page(&end, 3); !slices.Equal(ids(moved), []string{"si_ann_dan", "si_ann_eve", "n_ann"}) {
			t.Fatalf("page after a moved cursor: %v", ids(moved))
		}
		if p, _ := page(nil, 2); !slices.Equal(ids(p), []string{"si_ann_cat", "si_ann_bob"}) || p.Entries[1].Time != 50 {
			t.Fatalf("after sends: %+v", p.Entries)
		}
		// The end of the order, past its last personal conversation, holds no group.
		last := im.ListPosition{Time: 5, ConversationID: "n_ann"}
		if p, _ := page(&last, 5); len(p.Entries) != 0 {
			t.Fatalf("page past the end: %+v", p.Entries)
		}
		// Leaving a group takes it off the order with the list.
		if err := e.cache.RemoveFromConversationLists(e.ctx, "sg_team", []string{"ann"}); err != nil {
			t.Fatal(err)
		}
		if p, _ := page(nil, 1); !slices.Equal(p.Groups, []string{"n_sg_team"}) {
			t.Fatalf("groups after leaving: %v", p.Groups)
		}
		// The states guessed come in the same round trip, aligned with the guess.
		maxSeq, minSeq := int64(7), int64(0)
		if err := e.cache.RaiseStates(e.ctx, []cache.ConversationRaise{{ConversationID: "si_ann_cat", MaxSeq: &maxSeq, MinSeq: &minSeq}}, nil); err != nil {
			t.Fatal(err)
		}
		_, st := page(nil, 1, "si_ann_bob", "si_ann_cat")
		if len(st.Conversations) != 1 || len(st.Conversations[0]) != 2 || st.Conversations[0][1].MaxSeq != 7 || st.Conversations[0][1].LastTime != 60 {
			t.Fatalf("guessed states %+v", st.Conversations)
		}
	})
}
