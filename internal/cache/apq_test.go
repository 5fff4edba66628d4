package cache_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
		pq.Add(e.ctx, hash, query)
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
			pq.Add(e.ctx, h, "{ __typename }")
			if _, ok := pq.Get(e.ctx, h); ok {
				t.Errorf("malformed hash %q found", h)
			}
		}
		e.roundTrips(t, "malformed hashes", 0)
	})
}

// Ensure a Redis that is down is a miss, and a lost store is no error: the client just sends
// the full query again.
func TestPersistedQueriesRedisDown(t *testing.T) {
	t.Parallel()
	eachTopologyToStop(t, func(t *testing.T, e *env) {
		pq := e.cache.PersistedQueries(0)
		hash := sha256Hex("{ __typename }")
		pq.Add(e.ctx, hash, "{ __typename }")
		e.stopRedis(t)
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		defer cancel()
		pq.Add(ctx, sha256Hex("{ x: __typename }"), "{ x: __typename }")
		if q, ok := pq.Get(ctx, hash); ok {
			t.Fatalf("Redis down: Get = %q, true", q)
		}
	})
}
