package openimfeed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// Ensure Lag counts the records of the topic not applied yet, the batch being applied
// included, and falls to zero once they are: what an operator alerts on when msggate's sync
// falls behind OpenIM (msggate_openim_feed_lag_records).
func TestFeedLag(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{Partitions: 1})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	ctx := context.Background()
	const pushed = 10
	for i := range pushed {
		producer.PushMessage(ctx, groupText("g1", "alice", fmt.Sprintf("cm-%d", i), int64(i+1), 1700000000000+int64(i)), headers)
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c := &collector{fail: func(call int, _ []openimfeed.Change) error {
		if call == 1 {
			entered <- struct{}{}
			<-release
		}
		return nil
	}}
	r := startFeed(t, openimfeed.Options{Brokers: brokers, StartAtOldest: true}, c.apply)
	select {
	case <-entered:
	case <-time.After(waitLimit):
		t.Fatal("apply was not called")
	}
	if got := r.feed.Lag(); got != pushed {
		t.Errorf("lag while the first batch is applied: %d, want %d", got, pushed)
	}
	close(release)
	c.waitFor(t, pushed)
	deadline := time.Now().Add(waitLimit)
	for r.feed.Lag() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.feed.Lag(); got != 0 {
		t.Errorf("lag once every record is applied: %d, want 0", got)
	}
}
