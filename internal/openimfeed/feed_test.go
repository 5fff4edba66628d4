package openimfeed_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
	"github.com/openimsdk/protocol/constant"
	"github.com/openimsdk/protocol/sdkws"
)

const waitLimit = 20 * time.Second

var headers = openimfeedtest.Headers{OperationID: "op-1", OpUserID: "alice", Platform: "Android", ConnID: "conn-1"}

// running is a Feed whose Run goes on in the background until stop.
type running struct {
	feed   *openimfeed.Feed
	cancel context.CancelFunc
	done   chan error
}

func startFeed(t *testing.T, opts openimfeed.Options, apply func(context.Context, []openimfeed.Change) error) *running {
	t.Helper()
	feed, err := openimfeed.Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{feed: feed, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- feed.Run(ctx, apply) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends Run, checks it returned ctx's error, and closes the Feed; it may be called twice.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(waitLimit):
		t.Errorf("Run did not return after its ctx ended")
	}
	r.feed.Close()
}

// collector is an apply that records every successful batch.
type collector struct {
	mu      sync.Mutex
	changes []openimfeed.Change
	batches int
	fail    func(call int, changes []openimfeed.Change) error // nil: always succeed
	calls   int
	seen    [][]openimfeed.Change // every call's batch, failed or not
}

func (c *collector) apply(_ context.Context, changes []openimfeed.Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.seen = append(c.seen, slices.Clone(changes))
	if c.fail != nil {
		if err := c.fail(c.calls, changes); err != nil {
			return err
		}
	}
	c.batches++
	c.changes = append(c.changes, changes...)
	return nil
}

// waitFor waits until the collector holds n changes and returns them.
func (c *collector) waitFor(t *testing.T, n int) []openimfeed.Change {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		got := slices.Clone(c.changes)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Fatalf("applied %d changes within %v, want %d", len(c.changes), waitLimit, n)
	return nil
}

func (c *collector) waitCalls(t *testing.T, n int) [][]openimfeed.Change {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		seen := slices.Clone(c.seen)
		c.mu.Unlock()
		if len(seen) >= n {
			return seen
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("apply called fewer than %d times within %v", n, waitLimit)
	return nil
}

type position struct {
	Partition int32
	Offset    int64
}

func positions(changes []openimfeed.Change) []position {
	var ps []position
	for _, c := range changes {
		ps = append(ps, position{c.Partition, c.Offset})
	}
	return ps
}

func groupText(groupID, sendID, clientMsgID string, seq, sendTime int64) *sdkws.MsgData {
	return &sdkws.MsgData{
		SendID: sendID, GroupID: groupID, ClientMsgID: clientMsgID,
		SessionType: constant.ReadGroupChatType, ContentType: constant.Text,
		MsgFrom: constant.UserMsgType, Content: []byte(`{"content":"hi"}`),
		Seq: seq, SendTime: sendTime,
	}
}

// TestFeedDecodesEachKind pushes a message of each kind the way OpenIM does and checks every
// field of the Change msggate gets.
func TestFeedDecodesEachKind(t *testing.T) {
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})
	ctx := context.Background()

	type want struct {
		produced openimfeedtest.Produced
		change   openimfeed.Change
	}
	var wants []want
	push := func(p openimfeedtest.Produced, m *sdkws.MsgData, c openimfeed.Change) {
		c.Partition, c.Offset, c.OperationID = p.Partition, p.Offset, headers.OperationID
		c.ClientMsgID, c.SendTime = m.ClientMsgID, m.SendTime
		wants = append(wants, want{p, c})
	}

	groupMsg := groupText("g1", "alice", "cm-group", 7, 1700000000123)
	p := producer.PushMessage(ctx, groupMsg, headers)
	push(p, groupMsg, openimfeed.Change{Kind: openimfeed.KindMessage, ConversationID: "sg_g1", Seq: 7,
		SendID: "alice", GroupID: "g1", SessionType: 3, ContentType: 101})

	single := &sdkws.MsgData{SendID: "bob", RecvID: "alice", ClientMsgID: "cm-single",
		SessionType: constant.SingleChatType, ContentType: constant.Picture, Seq: 3, SendTime: 1700000000456}
	p = producer.PushMessage(ctx, single, headers)
	push(p, single, openimfeed.Change{Kind: openimfeed.KindMessage, ConversationID: "si_alice_bob", Seq: 3,
		SendID: "bob", RecvID: "alice", SessionType: 1, ContentType: 102})

	p, m := producer.PushNotification(ctx, openimfeedtest.Revoke("alice", groupMsg, "sg_g1", 7, 12), headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindRevoke, ConversationID: "n_g1", Seq: 12,
		SendID: "alice", RecvID: "g1", GroupID: "g1", SessionType: 3, ContentType: 2101,
		UserID: "alice", TargetConversationID: "sg_g1", Seqs: []int64{7}})

	p, m = producer.PushNotification(ctx, openimfeedtest.DeleteForEveryone("bob", "alice", constant.SingleChatType, "si_alice_bob", []int64{2, 3}, 5), headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindDelete, ConversationID: "n_alice_bob", Seq: 5,
		SendID: "bob", RecvID: "alice", SessionType: 1, ContentType: 2102,
		UserID: "bob", TargetConversationID: "si_alice_bob", Seqs: []int64{2, 3}})

	p, m = producer.PushNotification(ctx, openimfeedtest.DeleteForSelf("bob", "sg_g1", []int64{4}, 9), headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindDelete, ConversationID: "n_bob_bob", Seq: 9,
		SendID: "bob", RecvID: "bob", SessionType: 1, ContentType: 2102,
		UserID: "bob", TargetConversationID: "sg_g1", Seqs: []int64{4}})

	clear := openimfeedtest.ClearForSelf("carol", []string{"sg_g1", "si_alice_carol"})
	if clear.Stored() {
		t.Errorf("OpenIM stores a ClearConversationNotification; it has no reliability level and is not stored")
	}
	p, m = producer.PushNotification(ctx, clear, headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindClear, ConversationID: "n_carol_carol", Seq: 0,
		SendID: "carol", RecvID: "carol", SessionType: 1, ContentType: 1703,
		UserID: "carol", ConversationIDs: []string{"sg_g1", "si_alice_carol"}})

	p, m = producer.PushNotification(ctx, openimfeedtest.MarkAsReadSingle("alice", "bob", "si_alice_bob", []int64{3}, 3, 6), headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindRead, ConversationID: "n_alice_bob", Seq: 6,
		SendID: "alice", RecvID: "bob", SessionType: 1, ContentType: 2200,
		UserID: "alice", TargetConversationID: "si_alice_bob", Seqs: []int64{3}, HasReadSeq: 3})

	readSelf := openimfeedtest.MarkAsReadSelf("dave", "sg_g1", 7)
	readSelf.Seq = 99 // OpenIM does not store a read receipt to oneself: no seq reaches toPush
	p, m = producer.PushNotification(ctx, readSelf, headers)
	push(p, m, openimfeed.Change{Kind: openimfeed.KindRead, ConversationID: "n_dave_dave", Seq: 0,
		SendID: "dave", RecvID: "dave", SessionType: 1, ContentType: 2200,
		UserID: "dave", TargetConversationID: "sg_g1", HasReadSeq: 7})

	var c collector
	startFeed(t, openimfeed.Options{Brokers: brokers, StartAtOldest: true}, c.apply)
	got := c.waitFor(t, len(wants))
	if len(got) != len(wants) {
		t.Fatalf("got %d changes, want %d: %+v", len(got), len(wants), got)
	}
	byPosition := map[position]openimfeed.Change{}
	for _, g := range got {
		byPosition[position{g.Partition, g.Offset}] = g
	}
	for _, w := range wants {
		g, ok := byPosition[position{w.produced.Partition, w.produced.Offset}]
		if !ok {
			t.Errorf("no change for the %s record at partition %d offset %d", w.change.Kind, w.produced.Partition, w.produced.Offset)
			continue
		}
		if !equalChange(g, w.change) {
			t.Errorf("%s record:\n got  %+v\n want %+v", w.change.Kind, g, w.change)
		}
	}
	checkPartitionOrder(t, got)
}

func equalChange(a, b openimfeed.Change) bool {
	return a.Kind == b.Kind && a.ConversationID == b.ConversationID && a.Seq == b.Seq &&
		a.SendID == b.SendID && a.RecvID == b.RecvID && a.GroupID == b.GroupID &&
		a.SessionType == b.SessionType && a.ContentType == b.ContentType &&
		a.ClientMsgID == b.ClientMsgID && a.SendTime == b.SendTime && a.UserID == b.UserID &&
		a.TargetConversationID == b.TargetConversationID && slices.Equal(a.Seqs, b.Seqs) &&
		a.HasReadSeq == b.HasReadSeq && slices.Equal(a.ConversationIDs, b.ConversationIDs) &&
		a.Partition == b.Partition && a.Offset == b.Offset && a.OperationID == b.OperationID
}

// checkPartitionOrder checks that each partition's changes came in offset order.
func checkPartitionOrder(t *testing.T, changes []openimfeed.Change) {
	t.Helper()
	last := map[int32]int64{}
	for _, c := range changes {
		if prev, ok := last[c.Partition]; ok && c.Offset <= prev {
			t.Errorf("partition %d: offset %d applied after offset %d", c.Partition, c.Offset, prev)
		}
		last[c.Partition] = c.Offset
	}
}

func TestChangeKindString(t *testing.T) {
	for kind, want := range map[openimfeed.ChangeKind]string{
		openimfeed.KindMessage: "message", openimfeed.KindRevoke: "revoke", openimfeed.KindDelete: "delete",
		openimfeed.KindClear: "clear", openimfeed.KindRead: "read", openimfeed.ChangeKind(42): "ChangeKind(42)",
	} {
		if got := kind.String(); got != want {
			t.Errorf("ChangeKind(%d).String() = %q, want %q", int(kind), got, want)
		}
	}
}
