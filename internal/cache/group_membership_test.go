package cache_test

import (
	"testing"

	"github.com/msggate/msggate/internal/cache"
)

// Ensure a membership read from MongoDB before a change of the group is never cached after
// it, whatever the order in which the reader's fill and the writer's hold and release
// arrive; that a held membership reads as "ask MongoDB" and takes no fill until its release;
// and that one user's fill caches that user alone, in a group of any size.
func TestMembershipFillsNeverOutliveAChange(t *testing.T) {
	eachTopology(t, func(t *testing.T, e *env) {
		read := func(user string) cache.Membership {
			t.Helper()
			got, _, err := e.cache.GetMemberships(e.ctx, cache.MembershipQuery{UserID: user, GroupIDs: []string{"g"}}, nil)
			if err != nil || len(got) != 1 {
				t.Fatalf("GetMemberships(%s): %v, %v", user, got, err)
			}
			return got[0]
		}
		fill := func(user string, seen cache.Membership, member bool) {
			t.Helper()
			f := cache.MembershipFill{GroupID: "g", Version: seen.Version, Member: member, Role: 20}
			if err := e.cache.FillMemberships(e.ctx, user, []cache.MembershipFill{f}); err != nil {
				t.Fatal(err)
			}
		}

		// A cold read misses; its fill is what the next read finds, role included.
		bob := read("bob")
		if bob.Cached || bob.Held {
			t.Fatalf("cold read: %+v, want a miss", bob)
		}
		fill("bob", bob, true)
		if got := read("bob"); !got.Cached || !got.Member || got.Role != 20 {
			t.Fatalf("after the fill: %+v, want member with role 20", got)
		}
		if got := read("carol"); got.Cached {
			t.Fatalf("carol was never filled: %+v", got)
		}

		// bob's removal: a reader that looked before the hold (and so may have read MongoDB
		// before the write) fills after it; the fill must not be kept.
		if err := e.rdb.Del(e.ctx, "t:{g:g}:members").Err(); err != nil {
			t.Fatal(err)
		}
		early := read("bob")
		if err := e.cache.HoldMemberships(e.ctx, "g", []string{"bob"}); err != nil {
			t.Fatal(err)
		}
		fill("bob", early, true)
		held := read("bob")
		if held.Cached || !held.Held {
			t.Fatalf("while held: %+v, want held (ask MongoDB)", held)
		}
		fill("bob", held, true) // a reader during the hold fills nothing, even if it tries
		if got := read("bob"); !got.Held {
			t.Fatalf("a fill during the hold replaced it: %+v", got)
		}
		if err := e.cache.ReleaseMemberships(e.ctx, "g", []string{"bob"}); err != nil {
			t.Fatal(err)
		}
		fill("bob", early, true) // the early reader, later still
		fill("bob", held, true)
		after := read("bob")
		if after.Cached || after.Held {
			t.Fatalf("after the release: %+v, want a miss (no fill read before it kept)", after)
		}
		fill("bob", after, false) // read from MongoDB after the change: kept
		if got := read("bob"); !got.Cached || got.Member {
			t.Fatalf("after a fill read after the change: %+v, want not a member", got)
		}

		// The hash holds the version and the users asked about, not the group.
		if n, err := e.rdb.HLen(e.ctx, "t:{g:g}:members").Result(); err != nil || n != 2 {
			t.Errorf("the group's hash holds %d fields (%v), want 2: the version and bob", n, err)
		}
		if ttl, err := e.rdb.PTTL(e.ctx, "t:{g:g}:members").Result(); err != nil || ttl <= 0 {
			t.Errorf("the group's hash has TTL %v (%v), want one", ttl, err)
		}
	})
}
