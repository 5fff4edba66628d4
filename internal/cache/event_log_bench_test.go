package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// BenchmarkEventAppend measures what the event log costs a writer per event, against a
// baseline in the same run: the same events pushed and published with plain RPUSH and PUBLISH
// in one pipeline, which is the least a Redis-backed, published log can cost. The ratio of
// script/N to baseline/N is the price of positions, counters and trimming done in the script.
// Run: go test -run '^$' -bench EventAppend ./internal/cache/
func BenchmarkEventAppend(b *testing.B) {
	srv := testenv.Redis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{Prefix: "b:"})
	ctx := context.Background()
	for _, n := range []int{1, 100} {
		appends := make([]cache.EventAppend, n)
		payloads := make([]string, n)
		for i := range appends {
			appends[i] = cache.EventAppend{UserID: "bob",
				Event:  im.Event{Type: im.EventNewMessage, Time: time.Now().UnixMilli(), ConversationID: "si_alice_bob", Seq: int64(i + 1), SendID: "alice"},
				MaxSeq: int64(i + 1), ReadSeq: 0}
			p, _ := json.Marshal(appends[i].Event)
			payloads[i] = string(p)
		}
		b.Run(fmt.Sprintf("baseline/%d", n), func(b *testing.B) {
			for b.Loop() {
				pipe := rdb.Pipeline()
				for _, p := range payloads {
					pipe.RPush(ctx, "b:{u:bob}:plain", p)
					pipe.Publish(ctx, "b:{u:bob}:plain", p)
				}
				pipe.LTrim(ctx, "b:{u:bob}:plain", -10000, -1)
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
		b.Run(fmt.Sprintf("script/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.AppendEvents(ctx, appends); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
