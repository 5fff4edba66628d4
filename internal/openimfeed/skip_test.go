package openimfeed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// keeper is an OnSkip that records what it was handed, failing while fail says so.
type keeper struct {
	mu    sync.Mutex
	kept  []openimfeed.Skipped
	calls int
	fail  func(call int) error
}

func (k *keeper) onSkip(_ context.Context, s openimfeed.Skipped) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	if k.fail != nil {
		if err := k.fail(k.calls); err != nil {
			return err
		}
	}
	k.kept = append(k.kept, s)
	return nil
}

func (k *keeper) snapshot() ([]openimfeed.Skipped, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.kept), k.calls
}

// refusing is an apply that refuses, for good, any batch holding the change with clientMsgID
// poison, as the follower refuses a record whose user ID OpenIM's rules do not allow.
func refusing(poison string) func(int, []openimfeed.Change) error {
	return func(_ int, changes []openimfeed.Change) error {
		for _, c := range changes {
			if c.ClientMsgID == poison {
				return fmt.Errorf("%w: user ID %q is not allowed", openimfeed.ErrRefused, c.SendID)
			}
		}
		return nil
	}
}

// pushOtherGroup pushes n messages of a group whose key lands in another partition than g1's.
func pushOtherGroup(t *testing.T, producer *openimfeedtest.Producer, n int) ([]position, string) {
	t.Helper()
	g1 := openimfeedtest.SaramaHashPartition("g1", 4)
	group := ""
	for i := 2; group == ""; i++ {
		if id := fmt.Sprintf("g%d", i); openimfeedtest.SaramaHashPartition(id, 4) != g1 {
			group = id
		}
	}
	var ps []position
	for seq := int64(1); seq <= int64(n); seq++ {
		m := groupText(group, "bob", fmt.Sprintf("%s-%d", group, seq), seq, 1700000000000+seq)
		p := producer.PushMessage(context.Background(), m, headers)
		ps = append(ps, position{p.Partition, p.Offset})
	}
	return ps, group
}

// TestFeedSkipsRefusedRecord: a record apply refuses for good does not hold up the records
// after it, in its partition or another: they are applied, the refused one is handed to
// OnSkip once, with where it is in Kafka, and the commit goes past it (a restarted consumer
// starts after it).
func TestFeedSkipsRefusedRecord(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	before := pushGroupMessages(t, producer, 1, 2)
	poison := producer.PushMessage(context.Background(), groupText("g1", "eve:x", "poison", 3, 1700000000003), headers)
	after := pushGroupMessages(t, producer, 4, 2)
	other, _ := pushOtherGroup(t, producer, 2)

	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-refused", StartAtOldest: true}
	var k keeper
	opts.OnSkip = k.onSkip
	first := collector{fail: refusing("poison")}
	run := startFeed(t, opts, first.apply)
	want := slices.Concat(before, after, other)
	got := first.waitFor(t, len(want))
	if ps := positions(got); !sameSet(ps, want) {
		t.Errorf("applied %v, want every record but the refused one: %v", ps, want)
	}
	checkPartitionOrder(t, got)
	kept, _ := k.snapshot()
	if len(kept) != 1 {
		t.Fatalf("OnSkip got %d records, want the refused one: %+v", len(kept), kept)
	}
	s := kept[0]
	if s.Topic != openimfeedtest.Topic || s.Partition != poison.Partition || s.Offset != poison.Offset ||
		s.Reason != openimfeed.ReasonRefused || !errors.Is(s.Err, openimfeed.ErrRefused) || len(s.Value) == 0 || string(s.Key) != "g1" {
		t.Errorf("OnSkip got %+v, want the record at %s partition %d offset %d, reason refused", s, openimfeedtest.Topic, poison.Partition, poison.Offset)
	}
	run.stop(t)

	pushGroupMessages(t, producer, 6, 1)
	var second collector
	var k2 keeper
	opts.OnSkip = k2.onSkip
	startFeed(t, opts, second.apply)
	if seqs := seqsOf(second.waitFor(t, 1)); !slices.Equal(seqs, []int64{6}) {
		t.Errorf("a restarted consumer applied seqs %v, want [6]: the commit went past the refused record", seqs)
	}
	time.Sleep(200 * time.Millisecond)
	if seqs := seqsOf(second.waitFor(t, 1)); len(seqs) != 1 {
		t.Errorf("a restarted consumer applied seqs %v, want only [6]", seqs)
	}
	if kept, _ := k2.snapshot(); len(kept) != 0 {
		t.Errorf("a restarted consumer skipped %+v again", kept)
	}
}

// TestFeedRetriesAnOutageBeforeRefusing: an apply failing without ErrRefused (the store
// unreachable) skips nothing: the batch is tried again, whole, until it applies.
func TestFeedRetriesAnOutageBeforeRefusing(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	pushed := pushGroupMessages(t, producer, 1, 3)
	var k keeper
	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-outage", StartAtOldest: true, OnSkip: k.onSkip}
	c := collector{fail: func(call int, _ []openimfeed.Change) error {
		if call <= 3 {
			return errors.New("redis: connection refused")
		}
		return nil
	}}
	startFeed(t, opts, c.apply)
	if got := c.waitFor(t, 3); !slices.Equal(positions(got), pushed) {
		t.Errorf("applied %v, want %v once each", positions(got), pushed)
	}
	seen := c.waitCalls(t, 4)
	for i := 1; i < 4; i++ {
		if !slices.Equal(positions(seen[i]), positions(seen[0])) {
			t.Errorf("try %d applied %v, want the whole batch %v again", i+1, positions(seen[i]), positions(seen[0]))
		}
	}
	if kept, _ := k.snapshot(); len(kept) != 0 {
		t.Errorf("an outage skipped %+v", kept)
	}
}

// TestFeedCommitsNoSkipUntilKept: while OnSkip cannot keep a skipped record (the place it is
// kept is down), nothing is committed: a consumer stopped then leaves every record to the
// next, which keeps the skipped one and applies the rest.
func TestFeedCommitsNoSkipUntilKept(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	good := pushGroupMessages(t, producer, 1, 1)
	poison := producer.PushMessage(context.Background(), groupText("g1", "eve:x", "poison", 2, 1700000000002), headers)
	good = append(good, pushGroupMessages(t, producer, 3, 1)...)

	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-keep", StartAtOldest: true}
	down := keeper{fail: func(int) error { return errors.New("redis: connection refused") }}
	opts.OnSkip = down.onSkip
	first := collector{fail: refusing("poison")}
	run := startFeed(t, opts, first.apply)
	waitUntil(t, "OnSkip is tried again", func() bool { _, calls := down.snapshot(); return calls >= 2 })
	run.stop(t)

	var up keeper
	opts.OnSkip = up.onSkip
	second := collector{fail: refusing("poison")}
	startFeed(t, opts, second.apply)
	if got := second.waitFor(t, 2); !slices.Equal(positions(got), good) {
		t.Errorf("the next consumer applied %v, want %v: nothing was committed", positions(got), good)
	}
	waitUntil(t, "the refused record is kept", func() bool { kept, _ := up.snapshot(); return len(kept) == 1 })
	if kept, _ := up.snapshot(); kept[0].Offset != poison.Offset || kept[0].Partition != poison.Partition {
		t.Errorf("kept %+v, want the record at partition %d offset %d", kept[0], poison.Partition, poison.Offset)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sameSet(a, b []position) bool {
	less := func(x, y position) int {
		if x.Partition != y.Partition {
			return int(x.Partition - y.Partition)
		}
		return int(x.Offset - y.Offset)
	}
	a, b = slices.SortedFunc(slices.Values(a), less), slices.SortedFunc(slices.Values(b), less)
	return slices.Equal(a, b)
}
