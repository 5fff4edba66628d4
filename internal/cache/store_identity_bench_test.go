package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
)

// BenchmarkDiscardStoreState measures how long a discard of another store's state takes per
// key of a Redis holding 100,000 of msggate's keys (90% describing a store, 10% rate buckets),
// against a baseline in the same run: FLUSHDB of the same keys, the least that emptying them
// can cost. The discard holds the store's state back for as long as it runs.
// Run: go test -run '^$' -bench DiscardStoreState -benchtime 3x ./internal/cache/
func BenchmarkDiscardStoreState(b *testing.B) {
	srv := testenv.Redis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{Prefix: "b:"})
	ctx := context.Background()
	const keys = 100_000
	fill := func(b *testing.B) {
		b.Helper()
		pipe := rdb.Pipeline()
		for i := range keys {
			k := fmt.Sprintf("b:{si_a_%d}:seqstate", i)
			if i%10 == 0 {
				k = fmt.Sprintf("b:{u:u%d}:rate", i)
			}
			pipe.Set(ctx, k, "3,1,1700000000000,42", 0)
			if pipe.Len() == 1000 {
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("baseline-flushdb", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fill(b)
			b.StartTimer()
			if err := rdb.FlushDB(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
	})
	b.Run("discard", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fill(b)
			b.StartTimer()
			if done, _, err := c.DiscardStoreState(ctx, cache.StoreIdentity{Token: "t", Clock: 1, Stamp: "s"}); err != nil || !done {
				b.Fatal(done, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
	})
}
