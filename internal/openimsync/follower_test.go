package openimsync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimsync"
	imsync "github.com/msggate/msggate/internal/sync"
)

// world is an OpenIM deployment written by openimtest (FerretDB, a redis-server of its own),
// msggate's own Redis (another redis-server), and the follower and its event log over them.
type world struct {
	IM       *openimtest.Deployment
	own      *testenv.RedisServer // msggate's own Redis
	cache    *cache.Cache
	events   *imsync.EventLog
	follower *openimsync.Follower
}

func newWorld(t *testing.T, opts openimsync.Options) *world {
	t.Helper()
	own := testenv.Redis(t)
	c, err := cache.Dial(own.URL(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Following begins before OpenIM's clock starts (openimtest's send times count up from
	// when the deployment is made).
	if _, err := c.FollowingSince(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	m := testenv.Mongo(t)
	imRedis := testenv.Redis(t)
	d := openimtest.NewAt(t, m.Connect(t, nil), imRedis.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: imRedis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := openim.Open(context.Background(), m.Connect(t, nil), rdb, openim.Options{Secret: d.Secret})
	if err != nil {
		t.Fatal(err)
	}
	l := imsync.NewFollowerLog(c, openimsync.StateSource(store))
	return &world{IM: d, own: own, cache: c, events: l, follower: openimsync.New(l, store, c, opts)}
}

// record is the change OpenIM's toPush carries for a message stored at seq.
func record(conv string, seq int64, m *openimtest.MsgData) openimfeed.Change {
	return openimfeed.Change{Kind: openimfeed.KindMessage, ConversationID: conv, Seq: seq, SendID: m.SendID,
		RecvID: m.RecvID, GroupID: m.GroupID, ContentType: m.ContentType, SendTime: m.SendTime}
}

func (w *world) apply(t *testing.T, changes ...openimfeed.Change) {
	t.Helper()
	if err := w.follower.Apply(context.Background(), changes); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// difference returns userID's events since tok, all of them.
func (w *world) difference(t *testing.T, userID string, tok im.SyncToken) ([]im.Event, im.SyncToken) {
	t.Helper()
	d, err := w.events.Difference(context.Background(), userID, tok, 1000)
	if err != nil {
		t.Fatalf("Difference: %v", err)
	}
	if d.TooLong || d.HasMore {
		t.Fatalf("Difference: tooLong %v, hasMore %v", d.TooLong, d.HasMore)
	}
	return d.Events, d.Token
}

func summary(t *testing.T, w *world, userID string) imsync.Summary {
	t.Helper()
	s, err := w.events.Summary(context.Background(), userID)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return s
}

// Ensure a single chat's messages, as the feed tells them, reach both users' logs once each
// (a redelivered record adds nothing), with OpenIM's counters: the recipient's unread count is
// what OpenIM says, the sender has read their own message.
func TestFollowSingleChat(t *testing.T) {
	w := newWorld(t, openimsync.Options{})
	conv := openimtest.SingleConversationID("ann", "bob")
	first := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("hi"))
	seqs := w.IM.Send(conv, first)
	annTok, bobTok := summary(t, w, "ann").Token, summary(t, w, "bob").Token

	msgs := []*openimtest.MsgData{
		openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("one")),
		openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("two")),
	}
	more := w.IM.Send(conv, msgs...)
	changes := []openimfeed.Change{record(conv, seqs[0], first), record(conv, more[0], msgs[0]), record(conv, more[1], msgs[1])}
	w.apply(t, changes...)
	w.apply(t, changes[1:]...) // redelivered

	evs, _ := w.difference(t, "bob", bobTok)
	var got []int64
	for _, ev := range evs {
		if ev.Type != im.EventNewMessage || ev.ConversationID != conv {
			t.Fatalf("bob got %+v, want NEW_MESSAGE events of %s", ev, conv)
		}
		got = append(got, ev.Seq)
	}
	if want := []int64{seqs[0], more[0], more[1]}; !equalSeqs(got, want) {
		t.Fatalf("bob got seqs %v, want %v once each", got, want)
	}
	last := evs[len(evs)-1]
	if last.MaxSeq != more[1] || last.Unread != 3 || last.ReadSeq != 0 {
		t.Errorf("bob's last event: maxSeq %d unread %d readSeq %d, want %d, 3, 0", last.MaxSeq, last.Unread, last.ReadSeq, more[1])
	}
	evs, _ = w.difference(t, "ann", annTok)
	if len(evs) != 3 || evs[2].ReadSeq != more[1] || evs[2].Unread != 0 {
		t.Fatalf("ann got %+v, want 3 events, the last with readSeq %d and nothing unread", evs, more[1])
	}
}

// Ensure a group message is logged once, in the group's stream, and each member reads it with
// their own counters; a revoke, a delete for everyone and a read on another device (the tips
// OpenIM sends) become REVOKE, DELETE and READ events.
func TestFollowGroupAndTips(t *testing.T) {
	w := newWorld(t, openimsync.Options{})
	conv := openimtest.GroupConversationID("g1")
	w.IM.CreateGroupChatConversations("g1", "ann", "bob", "cy")
	for _, u := range []string{"ann", "bob", "cy"} {
		w.IM.AddGroupMember("g1", u, openimtest.RoleMember)
	}
	msgs := []*openimtest.MsgData{
		openimtest.Group("ann", "g1", openimtest.ContentText, openimtest.TextContent("a")),
		openimtest.Group("ann", "g1", openimtest.ContentText, openimtest.TextContent("b")),
	}
	seqs := w.IM.Send(conv, msgs[0])
	bobTok := summary(t, w, "bob").Token
	w.apply(t, record(conv, seqs[0], msgs[0]))
	seqs = append(seqs, w.IM.Send(conv, msgs[1])...)
	w.IM.SetReadSeq(conv, "bob", seqs[1])
	w.apply(t,
		record(conv, seqs[1], msgs[1]),
		// Tips are stored in the notification conversation, with seqs of their own there.
		openimfeed.Change{Kind: openimfeed.KindRevoke, ConversationID: "n_g1", Seq: 1, TargetConversationID: conv,
			UserID: "ann", SendID: "ann", GroupID: "g1", Seqs: []int64{seqs[0]}},
		openimfeed.Change{Kind: openimfeed.KindDelete, ConversationID: "n_g1", Seq: 2, TargetConversationID: conv,
			UserID: "ann", SendID: "ann", GroupID: "g1", Seqs: []int64{seqs[1]}},
		openimfeed.Change{Kind: openimfeed.KindRead, ConversationID: "n_bob", UserID: "bob", SendID: "bob", RecvID: "bob",
			TargetConversationID: conv, HasReadSeq: seqs[1]},
	)
	evs, _ := w.difference(t, "bob", bobTok)
	var kinds []im.EventType
	for _, ev := range evs {
		kinds = append(kinds, ev.Type)
	}
	want := []im.EventType{im.EventRead, im.EventNewMessage, im.EventNewMessage, im.EventRevoke, im.EventDelete}
	if len(kinds) != len(want) {
		t.Fatalf("bob got %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("bob got %v, want %v", kinds, want)
		}
	}
	if r := evs[0]; r.ReadSeq != seqs[1] || r.Unread != 0 {
		t.Errorf("READ: readSeq %d unread %d, want %d and 0", r.ReadSeq, r.Unread, seqs[1])
	}
	if ev := evs[3]; ev.Seq != seqs[0] || ev.Stream != conv {
		t.Errorf("REVOKE %+v, want seq %d in the group's stream", ev, seqs[0])
	}
	if ev := evs[4]; !ev.ForEveryone || len(ev.Seqs) != 1 || ev.Seqs[0] != seqs[1] {
		t.Errorf("DELETE %+v, want seq %d for everyone", ev, seqs[1])
	}
}

// sendText stores a text message from ann to bob in OpenIM's stores, as OpenIM would, and
// returns its seq and the record OpenIM's Kafka would carry for it.
func sendText(w *world, conv, text string) (int64, openimfeed.Change) {
	m := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent(text))
	seq := w.IM.Send(conv, m)[0]
	return seq, record(conv, seq, m)
}

// Ensure a message whose record never came is logged from OpenIM's stores: before the next
// record of its conversation, and by the gap fill when no record follows.
func TestFollowFillsLostRecords(t *testing.T) {
	w := newWorld(t, openimsync.Options{HoleGrace: time.Hour})
	conv := openimtest.SingleConversationID("ann", "bob")
	send := func(text string) (int64, openimfeed.Change) { return sendText(w, conv, text) }
	s1, r1 := send("1")
	tok := summary(t, w, "bob").Token
	w.apply(t, r1)
	s2, _ := send("2") // its record is lost
	_, r3 := send("3")
	w.apply(t, r3)
	s4, _ := send("4") // lost, and nothing follows
	if err := w.follower.FillGaps(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, _ := w.difference(t, "bob", tok)
	var got []int64
	for _, ev := range evs {
		got = append(got, ev.Seq)
	}
	if want := []int64{s1, s2, r3.Seq, s4}; !equalSeqs(got, want) {
		t.Fatalf("bob got seqs %v, want %v", got, want)
	}
	// A late record of a filled message adds nothing.
	w.apply(t, r3)
	if evs, _ := w.difference(t, "bob", tok); len(evs) != 4 {
		t.Fatalf("after a late record bob has %d events, want 4", len(evs))
	}

	// A new conversation whose first record is lost: its first message comes with the second.
	_, tok = w.difference(t, "cy", summary(t, w, "cy").Token)
	chat := openimtest.SingleConversationID("ann", "cy")
	m1 := openimtest.Single("ann", "cy", openimtest.ContentText, openimtest.TextContent("first"))
	n1 := w.IM.Send(chat, m1)[0]
	m2 := openimtest.Single("ann", "cy", openimtest.ContentText, openimtest.TextContent("second"))
	n2 := w.IM.Send(chat, m2)[0]
	w.apply(t, record(chat, n2, m2))
	evs, _ = w.difference(t, "cy", tok)
	got = got[:0]
	for _, ev := range evs {
		got = append(got, ev.Seq)
	}
	if want := []int64{n1, n2}; !equalSeqs(got, want) {
		t.Fatalf("cy got seqs %v, want %v", got, want)
	}
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// followedSeq is the seq up to which the follower says conv is logged.
func (w *world) followedSeq(t *testing.T, conv string) int64 {
	t.Helper()
	seqs, err := w.cache.FollowedSeqs(context.Background(), []string{conv})
	if err != nil {
		t.Fatal(err)
	}
	return seqs[0]
}

// Ensure a seq the gap fill cannot find yet (allocated by OpenIM, in neither of its stores)
// holds the followed seq below it, though records beyond it were logged: when that message
// reaches OpenIM's MongoDB later and its record is lost, the gap fill still announces it.
func TestFollowStopsAtAHole(t *testing.T) {
	w := newWorld(t, openimsync.Options{HoleGrace: time.Hour})
	conv := openimtest.SingleConversationID("ann", "bob")
	send := func(text string) (int64, openimfeed.Change) { return sendText(w, conv, text) }
	s1, r1 := send("1")
	tok := summary(t, w, "bob").Token
	w.apply(t, r1)
	hole := w.IM.Malloc(conv, 1) + 1 // its message is on its way to OpenIM's stores
	s3, r3 := send("3")
	s4, r4 := send("4")
	w.apply(t, r3, r4)
	if got := w.followedSeq(t, conv); got != s1 {
		t.Fatalf("followed seq %d after a batch behind a hole at %d, want %d (what was filled)", got, hole, s1)
	}

	late := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("2"))
	late.Seq, late.SendTime, late.CreateTime = hole, w.IM.Now(), w.IM.Now()
	w.IM.WriteMessages(conv, []*openimtest.MsgData{late}) // its record never comes
	if err := w.follower.FillGaps(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, _ := w.difference(t, "bob", tok)
	var got []int64
	for _, ev := range evs {
		got = append(got, ev.Seq)
	}
	if want := []int64{s1, s3, s4, hole}; !equalSeqs(got, want) {
		t.Fatalf("bob got seqs %v, want %v: the late message announced, nothing twice", got, want)
	}
	if got := w.followedSeq(t, conv); got != s4 {
		t.Errorf("followed seq %d once the hole was filled, want %d", got, s4)
	}
}

// Ensure a batch whose own seqs skip one (its record lost) raises the followed seq only up to
// the skip, so that the gap fill announces the skipped message.
func TestFollowStopsAtASkipInTheBatch(t *testing.T) {
	w := newWorld(t, openimsync.Options{HoleGrace: time.Hour})
	conv := openimtest.SingleConversationID("ann", "bob")
	send := func(text string) (int64, openimfeed.Change) { return sendText(w, conv, text) }
	s1, r1 := send("1")
	tok := summary(t, w, "bob").Token
	s2, _ := send("2") // its record is lost
	s3, r3 := send("3")
	w.apply(t, r1, r3)
	if got := w.followedSeq(t, conv); got != s1 {
		t.Fatalf("followed seq %d after a batch of seqs %d and %d, want %d", got, s1, s3, s1)
	}
	if err := w.follower.FillGaps(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, _ := w.difference(t, "bob", tok)
	var got []int64
	for _, ev := range evs {
		got = append(got, ev.Seq)
	}
	if want := []int64{s1, s3, s2}; !equalSeqs(got, want) {
		t.Fatalf("bob got seqs %v, want %v", got, want)
	}
	if got := w.followedSeq(t, conv); got != s3 {
		t.Errorf("followed seq %d after the gap fill, want %d", got, s3)
	}
}

// Ensure a record naming a user OpenIM allows and msggate cannot log for (a ':' in the ID) is
// refused for good (openimfeed.ErrRefused: the feed sets it aside and goes on), while the same
// Apply failing because msggate's Redis is down is an outage, to be retried.
func TestFollowRefusesWhatItCannotLog(t *testing.T) {
	w := newWorld(t, openimsync.Options{})
	conv := openimtest.SingleConversationID("bob", "eve:x")
	m := openimtest.Single("eve:x", "bob", openimtest.ContentText, openimtest.TextContent("hi"))
	seq := w.IM.Send(conv, m)[0]
	tok := summary(t, w, "bob").Token
	err := w.follower.Apply(context.Background(), []openimfeed.Change{record(conv, seq, m)})
	if !errors.Is(err, openimfeed.ErrRefused) {
		t.Fatalf("Apply of a record from user %q: %v, want ErrRefused", m.SendID, err)
	}
	if evs, _ := w.difference(t, "bob", tok); len(evs) != 0 {
		t.Errorf("bob got %+v from a refused record", evs)
	}

	good := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("ok"))
	chat := openimtest.SingleConversationID("ann", "bob")
	s1 := w.IM.Send(chat, good)[0]
	w.own.Stop()
	err = w.follower.Apply(context.Background(), []openimfeed.Change{record(chat, s1, good)})
	if err == nil || errors.Is(err, openimfeed.ErrRefused) {
		t.Fatalf("Apply with msggate's Redis down: %v, want an outage (not ErrRefused)", err)
	}
}

// Ensure a message read from OpenIM's stores that msggate cannot log (its sender's ID holds a
// ':') is passed over by the gap fill, so that the messages after it are still logged and the
// record that follows it is not refused in its place.
func TestFollowPassesOverAStoredMessageItCannotLog(t *testing.T) {
	w := newWorld(t, openimsync.Options{HoleGrace: time.Hour})
	conv := openimtest.SingleConversationID("ann", "bob")
	m1 := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("1"))
	s1 := w.IM.Send(conv, m1)[0]
	tok := summary(t, w, "bob").Token
	w.apply(t, record(conv, s1, m1))
	odd := openimtest.Single("eve:x", "bob", openimtest.ContentText, openimtest.TextContent("2"))
	w.IM.Send(conv, odd) // its record is lost
	m3 := openimtest.Single("ann", "bob", openimtest.ContentText, openimtest.TextContent("3"))
	s3 := w.IM.Send(conv, m3)[0]
	w.apply(t, record(conv, s3, m3))
	evs, _ := w.difference(t, "bob", tok)
	var got []int64
	for _, ev := range evs {
		got = append(got, ev.Seq)
	}
	if want := []int64{s1, s3}; !equalSeqs(got, want) {
		t.Fatalf("bob got seqs %v, want %v", got, want)
	}
	if got := w.followedSeq(t, conv); got != s3 {
		t.Errorf("followed seq %d, want %d: the message that cannot be logged is passed over", got, s3)
	}
}
