package openimfeed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// pushGroupMessages pushes n messages of group g1 with seqs from firstSeq. One group means one
// key, so all of them are in one partition, in order: a replayed old record would reach a
// consumer before any new one.
func pushGroupMessages(t *testing.T, producer *openimfeedtest.Producer, firstSeq int64, n int) []position {
	t.Helper()
	var ps []position
	for seq := firstSeq; seq < firstSeq+int64(n); seq++ {
		m := groupText("g1", "alice", fmt.Sprintf("cm-%d", seq), seq, 1700000000000+seq)
		p := producer.PushMessage(context.Background(), m, headers)
		ps = append(ps, position{p.Partition, p.Offset})
	}
	return ps
}

func seqsOf(changes []openimfeed.Change) []int64 {
	var seqs []int64
	for _, c := range changes {
		seqs = append(seqs, c.Seq)
	}
	return seqs
}

// TestFeedCommitsAfterApply: apply fails once, the Feed retries the same batch, commits it
// once apply succeeds, and a restarted consumer in the same group goes on after it, neither
// losing nor replaying a record.
func TestFeedCommitsAfterApply(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	pushGroupMessages(t, producer, 1, 3)

	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-commit", StartAtOldest: true}
	first := collector{fail: func(call int, _ []openimfeed.Change) error {
		if call == 1 {
			return errors.New("store unavailable")
		}
		return nil
	}}
	run := startFeed(t, opts, first.apply)
	if got := seqsOf(first.waitFor(t, 3)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("applied seqs %v, want [1 2 3] once each", got)
	}
	seen := first.waitCalls(t, 2)
	if !slices.Equal(positions(seen[0]), positions(seen[1])) {
		t.Errorf("after a failed apply the Feed applied %v, want the same batch %v again", positions(seen[1]), positions(seen[0]))
	}
	run.stop(t) // Run returns only after the applied batch's commit

	pushGroupMessages(t, producer, 4, 2)
	var second collector
	startFeed(t, opts, second.apply)
	if got := seqsOf(second.waitFor(t, 2)); !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("a restarted consumer applied seqs %v, want [4 5]: nothing before the commit, nothing lost", got)
	}
}

// TestFeedCommitsNothingUntilApplied: a consumer that stops while apply keeps failing has
// committed nothing, so the next consumer in the group gets the same records.
func TestFeedCommitsNothingUntilApplied(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	pushed := pushGroupMessages(t, producer, 1, 3)

	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-failing", StartAtOldest: true}
	failing := collector{fail: func(int, []openimfeed.Change) error { return errors.New("store unavailable") }}
	run := startFeed(t, opts, failing.apply)
	seen := failing.waitCalls(t, 2)
	if !slices.Equal(positions(seen[0]), positions(seen[1])) {
		t.Errorf("retry applied %v, want the same batch %v", positions(seen[1]), positions(seen[0]))
	}
	run.stop(t)

	var next collector
	startFeed(t, opts, next.apply)
	got := next.waitFor(t, 3)
	if !slices.Equal(positions(got), pushed) {
		t.Errorf("the next consumer applied %v, want every uncommitted record %v", positions(got), pushed)
	}
}

// TestFeedSkipsUndecodableRecord: a record that is not a PushMsgDataToMQ is skipped, the
// records around it are applied, and the skip is committed (not met again after a restart).
func TestFeedSkipsUndecodableRecord(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	ctx := context.Background()
	pushGroupMessages(t, producer, 1, 1)
	bad := producer.ProduceRaw(ctx, "g1", []byte("\xff\xff not protobuf"), headers)
	emptyTips, _ := producer.PushNotification(ctx, openimfeedtest.Notification{ // a 2101 whose detail is "null"
		SendID: "alice", RecvID: "g1", ContentType: 2101, SessionType: 3, Tips: nil, Seq: 4}, headers)
	damaged := openimfeedtest.NotificationMsgData(openimfeedtest.Revoke("alice", groupText("g1", "alice", "cm-1", 1, 1), "sg_g1", 1, 5))
	damaged.Content = []byte("not JSON")
	badContent := producer.Push(ctx, "g1", "n_g1", damaged, headers)
	undecodable := []openimfeedtest.Produced{bad, emptyTips, badContent}
	pushGroupMessages(t, producer, 2, 1)

	opts := openimfeed.Options{Brokers: brokers, Group: "msggate-skip", StartAtOldest: true}
	var first collector
	run := startFeed(t, opts, first.apply)
	got := first.waitFor(t, 2)
	if seqs := seqsOf(got); !slices.Equal(seqs, []int64{1, 2}) {
		t.Errorf("applied seqs %v, want [1 2] (the records around the undecodable ones)", seqs)
	}
	for _, c := range got {
		for _, u := range undecodable {
			if (position{c.Partition, c.Offset}) == (position{u.Partition, u.Offset}) {
				t.Errorf("an undecodable record was applied: %+v", c)
			}
		}
	}
	run.stop(t)

	pushGroupMessages(t, producer, 3, 1)
	var second collector
	startFeed(t, opts, second.apply)
	if seqs := seqsOf(second.waitFor(t, 1)); !slices.Equal(seqs, []int64{3}) {
		t.Errorf("after a restart applied seqs %v, want [3]", seqs)
	}
	time.Sleep(200 * time.Millisecond)
	if seqs := seqsOf(second.waitFor(t, 1)); len(seqs) != 1 {
		t.Errorf("after a restart applied seqs %v, want only [3]", seqs)
	}
}
