package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// A rate this slow adds a millionth of a token per millisecond: while a test runs, the bucket
// refills only when the test moves its clock, never by itself.
const frozenRate = 0.001

// take fails unless TakeToken answers want.
func take(t *testing.T, c *cache.Cache, user string, burst int, want bool) time.Duration {
	t.Helper()
	ok, retry, err := c.TakeToken(context.Background(), user, frozenRate, burst)
	if err != nil {
		t.Fatalf("TakeToken(%s): %v", user, err)
	}
	if ok != want {
		t.Fatalf("TakeToken(%s) = %v, want %v", user, ok, want)
	}
	if ok && retry != 0 {
		t.Fatalf("a taken token came with a retry hint of %v", retry)
	}
	return retry
}

// Ensure a bucket lets its burst through, then refuses with the time until the next token,
// refills at its rate, is one per user, and is shared by every client of the same Redis.
func TestTokenBucket(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		for range 3 {
			take(t, e.cache, "alice", 3, true)
		}
		retry := take(t, e.cache, "alice", 3, false)
		if want := time.Duration(float64(time.Second) / frozenRate); retry <= want-time.Second || retry > want {
			t.Errorf("retry hint %v, want just under %v (one token at %v a second)", retry, want, frozenRate)
		}
		take(t, e.cache, "bob", 3, true)

		// Another instance, through its own connection, draws from the same bucket.
		other := cache.New(e.connect(), cache.Options{Prefix: "t:"})
		take(t, other, "alice", 3, false)

		// 1000s at 0.001 tokens a second is one token: move the bucket's clock back by that much.
		const key = "t:{u:alice}:rate"
		if err := e.rdb.HIncrBy(e.ctx, key, "at", -1000*1000).Err(); err != nil {
			t.Fatal(err)
		}
		take(t, other, "alice", 3, true)
		take(t, e.cache, "alice", 3, false)

		// Never more than the burst, however long the bucket was left alone.
		if err := e.rdb.HIncrBy(e.ctx, key, "at", -1000*1000*1000).Err(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			take(t, e.cache, "alice", 3, true)
		}
		take(t, e.cache, "alice", 3, false)

		ttl, err := e.rdb.PTTL(e.ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if full := time.Duration(3 * float64(time.Second) / frozenRate); ttl <= 0 || ttl > full+time.Second {
			t.Errorf("bucket TTL %v, want positive and at most the time to refill (%v) plus 1s", ttl, full)
		}
	})
}

// Ensure the bucket runs on the embedded default's Redis (miniredis) as on redis-server.
func TestTokenBucketOnMiniredis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	take(t, c, "alice", 2, true)
	take(t, c, "alice", 2, true)
	if retry := take(t, c, "alice", 2, false); retry <= 0 {
		t.Errorf("no retry hint: %v", retry)
	}
	if mr.TTL("msggate:{u:alice}:rate") <= 0 {
		t.Errorf("the bucket has no TTL")
	}
}

// Ensure nonsense parameters and a Redis that is down are errors, never a silent allow or
// refusal: the caller decides what a failed limiter means.
func TestTokenBucketErrors(t *testing.T) {
	t.Parallel()
	eachTopologyToStop(t, func(t *testing.T, e *env) {
		for _, tc := range []struct {
			rate  float64
			burst int
		}{{0, 10}, {-1, 10}, {10, 0}} {
			if _, _, err := e.cache.TakeToken(e.ctx, "alice", tc.rate, tc.burst); err == nil {
				t.Errorf("rate %v burst %d: no error", tc.rate, tc.burst)
			}
		}
		e.trips.Take()
		e.stopRedis(t)
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		defer cancel()
		if _, _, err := e.cache.TakeToken(ctx, "alice", 10, 10); im.ErrorCode(err) != im.EUNAVAILABLE {
			t.Errorf("Redis down: err %v, want an %s error", err, im.EUNAVAILABLE)
		}
	})
}
