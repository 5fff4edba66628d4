package openimfeed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRunEndsOnClose: a Feed closed while Run waits for records makes Run return the
// client's closed error rather than hang.
func TestRunEndsOnClose(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	var c collector
	feed, err := openimfeed.Open(openimfeed.Options{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- feed.Run(context.Background(), c.apply) }()
	time.Sleep(300 * time.Millisecond) // let Run reach its poll (a Close before it is fine too)
	feed.Close()
	select {
	case err := <-done:
		if !errors.Is(err, kgo.ErrClientClosed) {
			t.Errorf("Run returned %v after Close, want kgo.ErrClientClosed", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return after Close")
	}
}

// TestRunTwiceRefused: the first Run's client has moved past what it did not commit, so a
// second Run on the same Feed is refused instead of skipping records.
func TestRunTwiceRefused(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	var c collector
	feed, err := openimfeed.Open(openimfeed.Options{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := feed.Run(ctx, c.apply); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with an ended ctx returned %v, want context.Canceled", err)
	}
	if err := feed.Run(context.Background(), c.apply); !errors.Is(err, openimfeed.ErrRunTwice) {
		t.Errorf("second Run returned %v, want ErrRunTwice", err)
	}
}
