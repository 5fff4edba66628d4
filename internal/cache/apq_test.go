package cache_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cache"
)

func sha256Hex(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

// Ensure a registered query is found by its hash, through any client of the same Redis, and
// expires after its TTL.
func TestPersistedQueries(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		pq := e.cache.PersistedQueries(time.Hour)
		const query = "{ viewer { userID } }"
		hash := sha256Hex(query)
		if q, ok := pq.Get(e.ctx, hash); ok {
			t.Fatalf("unregistered hash found: %q", q)
		}
		if ok, err := pq.Register(e.ctx, "alice", hash, query, -1, -1); !ok || err != nil {
			t.Fatalf("Register = %v, %v", ok, err)
		}
		if q, ok := pq.Get(e.ctx, hash); !ok || q != query {
			t.Fatalf("Get after Add = %q, %v", q, ok)
		}

		other := cache.New(e.connect(), cache.Options{Prefix: "t:"}).PersistedQueries(0)
		if q, ok := other.Get(e.ctx, hash); !ok || q != query {
			t.Fatalf("another instance: Get = %q, %v", q, ok)
		}

		ttl, err := e.rdb.PTTL(e.ctx, "t:apq:"+hash).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > time.Hour {
			t.Errorf("TTL %v, want at most 1h", ttl)
		}
	})
}

// Ensure what cannot be a SHA-256 is a miss without a round trip, and never stored.
func TestPersistedQueriesIgnoreMalformedHashes(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		pq := e.cache.PersistedQueries(0)
		upper := "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
		for _, h := range []string{"", "abc", upper, "../../../../etc/passwd" + upper[:42]} {
			if ok, err := pq.Register(e.ctx, "alice", h, "{ __typename }", -1, -1); ok || err != nil {
				t.Errorf("malformed hash %q registered: %v, %v", h, ok, err)
			}
			if _, ok := pq.Get(e.ctx, h); ok {
				t.Errorf("malformed hash %q found", h)
			}
		}
		e.roundTrips(t, "malformed hashes", 0)
	})
}

// Ensure a Redis that is down is a miss, and a registration that fails says so (the caller
// drops it: the client just sends the full query again).
func TestPersistedQueriesRedisDown(t *testing.T) {
	t.Parallel()
	eachTopologyToStop(t, func(t *testing.T, e *env) {
		pq := e.cache.PersistedQueries(0)
		hash := sha256Hex("{ __typename }")
		if ok, err := pq.Register(e.ctx, "alice", hash, "{ __typename }", -1, -1); !ok || err != nil {
			t.Fatalf("Register = %v, %v", ok, err)
		}
		e.stopRedis(t)
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		defer cancel()
		if ok, err := pq.Register(ctx, "alice", sha256Hex("{ x: __typename }"), "{ x: __typename }", -1, -1); ok || err == nil {
			t.Errorf("Redis down: Register = %v, %v; want false and an error", ok, err)
		}
		if q, ok := pq.Get(ctx, hash); ok {
			t.Fatalf("Redis down: Get = %q, true", q)
		}
	})
}

// Ensure what one user registers in a window is bounded by count and by bytes: a registration
// past either is not kept (nor counted, so a smaller one may still fit), other users have
// their own bound, a query someone else keeps is not taken away by a refused registration,
// and the count lives no longer than the window.
func TestPersistedQueriesBoundPerUser(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		pq := e.cache.PersistedQueries(time.Hour)
		register := func(user, query string) bool {
			t.Helper()
			ok, err := pq.Register(e.ctx, user, sha256Hex(query), query, 3, 110)
			if err != nil {
				t.Fatal(err)
			}
			_, kept := pq.Get(e.ctx, sha256Hex(query))
			if ok != kept {
				t.Fatalf("%s registering %q: answered %v, but kept is %v", user, query, ok, kept)
			}
			return ok
		}
		long := "{ " + strings.Repeat("a: __typename ", 6) + "}" // 87 bytes, of 110
		if !register("alice", long) {
			t.Fatal("a first query within both bounds was refused")
		}
		if register("alice", "{ b: __typename, c: __typename }") {
			t.Error("a query past the bytes bound was kept")
		}
		if !register("alice", "{ d }") || !register("alice", "{ e }") {
			t.Error("small queries within both bounds were refused (the refused one was counted)")
		}
		if register("alice", "{ f }") {
			t.Error("a fourth query was kept, past the count bound of 3")
		}
		if !register("bob", "{ f }") {
			t.Error("bob was held back by alice's bound")
		}
		if ok, err := pq.Register(e.ctx, "alice", sha256Hex("{ f }"), "{ f }", 3, 110); ok || err != nil {
			t.Errorf("alice over her bound registering bob's query: %v, %v", ok, err)
		}
		if _, kept := pq.Get(e.ctx, sha256Hex("{ f }")); !kept {
			t.Error("a refused registration took away the query bob registered")
		}
		ttl, err := e.rdb.PTTL(e.ctx, "t:{u:alice}:apq").Result()
		if err != nil || ttl <= 0 || ttl > time.Hour {
			t.Errorf("alice's registrations live %v (%v), want at most the 1h window", ttl, err)
		}
	})
}
