package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// env is the write path over a real FerretDB and a real redis-server.
type env struct {
	ctx    context.Context
	store  *chunkstore.Store
	ledger *imsync.Ledger
	cache  *cache.Cache
	in     *ingest.Ingester
	// db and redisAddr are where the stores are, for a second write path on them (reopen).
	db        *mongo.Database
	redisAddr string
}

func open(t *testing.T) *env { t.Helper(); return openWatched(t, nil) }

// openWatched is open with a monitor told of every MongoDB command.
func openWatched(t *testing.T, monitor *event.CommandMonitor) *env {
	t.Helper()
	return openOn(t, testenv.Mongo(t).Connect(t, monitor), testenv.Redis(t).Addr())
}

// openOn opens the write path on a MongoDB database and a redis-server.
func openOn(t *testing.T, db *mongo.Database, redisAddr string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	ledger := imsync.NewLedger(store, c, imsync.Options{})
	return &env{ctx: ctx, store: store, ledger: ledger, cache: c, in: ingest.New(store, c, ledger, ingest.Options{}), db: db, redisAddr: redisAddr}
}

// reopen opens a second write path on e's stores, as a gateway started afterwards would.
func (e *env) reopen(t *testing.T) *env { t.Helper(); return openOn(t, e.db, e.redisAddr) }

// send ingests messages and returns the seq of each one's first placement.
func (e *env) send(t *testing.T, msgs ...*im.Message) []int64 {
	t.Helper()
	res, err := e.in.Ingest(e.ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Placements[0].Seq
	}
	return out
}

// slot reads a seq's slot from MongoDB, where the truth is.
func (e *env) slot(t *testing.T, conv string, seq int64) *im.Slot {
	t.Helper()
	chunks, err := e.store.FindChunks(e.ctx, []string{im.DocID(conv, seq)})
	if err != nil {
		t.Fatal(err)
	}
	return chunks[0].Slot(seq)
}

func (e *env) state(t *testing.T, user, conv string) im.SeqState {
	t.Helper()
	st, err := e.ledger.States(e.ctx, user, []string{conv})
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}

func chat(from, to, clientMsgID, content string) *im.Message {
	return &im.Message{SendID: from, RecvID: to, ClientMsgID: clientMsgID, ContentType: 101, Content: content}
}

// Ensure a send is stored at its seq, a retry with the same client message ID (in a later call
// or within one batch) gets the same seq and leaves the stored message alone, and the seq
// state counts each message once: unread for the receiver, read for the sender.
func TestIngestStoresOnceAndRetriesKeepTheSeq(t *testing.T) {
	t.Parallel()
	e := open(t)
	const conv = "si_alice_bob"
	if got := e.send(t, chat("alice", "bob", "c1", "first"), chat("bob", "alice", "c2", "second")); got[0] != 1 || got[1] != 2 {
		t.Fatalf("seqs %v, want [1 2]", got)
	}
	res, err := e.in.Ingest(e.ctx, []*im.Message{chat("alice", "bob", "c1", "first, sent again")})
	if err != nil {
		t.Fatal(err)
	}
	if p := res[0].Placements[0]; p.Seq != 1 || !p.Duplicate {
		t.Fatalf("the retry got %+v, want seq 1 as a duplicate", p)
	}
	if s := e.slot(t, conv, 1); s == nil || s.Msg == nil || s.Msg.Content != "first" || s.Msg.Seq != 1 {
		t.Fatalf("seq 1 holds %+v, want the first send", s)
	}
	if got := e.send(t, chat("alice", "bob", "c3", "third"), chat("alice", "bob", "c3", "third")); got[0] != 3 || got[1] != 3 {
		t.Fatalf("one message twice in a batch got seqs %v, want [3 3]", got)
	}
	if s := e.slot(t, conv, 4); s != nil && s.Msg != nil {
		t.Errorf("seq 4 holds %+v: a copy was stored twice", s.Msg)
	}
	if st := e.state(t, "bob", conv); st.MaxSeq != 3 || st.ReadSeq != 2 || st.Unread() != 1 {
		t.Errorf("bob: %+v, want max seq 3, read seq 2 (his own message), 1 unread", st)
	}
	if st := e.state(t, "alice", conv); st.ReadSeq != 3 || st.Unread() != 0 {
		t.Errorf("alice: %+v, want read seq 3, nothing unread", st)
	}
	lists, _, err := e.store.FindUsersConversations(e.ctx, []string{"bob"}, 10)
	ids := lists["bob"]
	if err != nil || len(ids) != 1 || ids[0] != conv {
		t.Errorf("bob's conversation list %v, %v", ids, err)
	}
}

// groupSend ingests one message of sender into the group "team" under a client message ID and
// returns where it went.
func (e *env) groupSend(t *testing.T, sender, clientMsgID, content string) ingest.Placed {
	t.Helper()
	res, err := e.in.Ingest(e.ctx, []*im.Message{{SendID: sender, GroupID: "team", ClientMsgID: clientMsgID, ContentType: 101, Content: content}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Placements[0]
}

// holds fails unless seqs 1, 2, ... of conv hold exactly the given contents, and the seq after
// them nothing, and the conversation's max seq is the last of them.
func (e *env) holds(t *testing.T, conv string, contents ...string) {
	t.Helper()
	for i, want := range contents {
		if s := e.slot(t, conv, int64(i+1)); s == nil || s.Msg == nil || s.Msg.Content != want {
			t.Errorf("seq %d holds %+v, want %q", i+1, s, want)
		}
	}
	if s := e.slot(t, conv, int64(len(contents)+1)); s != nil && s.Msg != nil {
		t.Errorf("seq %d holds %q by %s: a message was stored twice", len(contents)+1, s.Msg.Content, s.Msg.SendID)
	}
	if st := e.state(t, "bob", conv); st.MaxSeq != int64(len(contents)) {
		t.Errorf("max seq %d, want %d", st.MaxSeq, len(contents))
	}
}

// wantPlaced fails unless a send went to seq, as a duplicate of an earlier send or not.
func wantPlaced(t *testing.T, what string, p ingest.Placed, seq int64, duplicate bool) {
	t.Helper()
	if p.Seq != seq || p.Duplicate != duplicate {
		t.Errorf("%s got seq %d (duplicate %v), want seq %d (duplicate %v)", what, p.Seq, p.Duplicate, seq, duplicate)
	}
}

// Ensure a client message ID names a send only together with its sender: in a group, carol's
// send with the ID bob used is a new message of hers, and bob's retry still gets his seq, so
// the group holds each message once.
func TestClientMsgIDIsTheSendersOwn(t *testing.T) {
	t.Parallel()
	e := open(t)
	wantPlaced(t, "bob's send", e.groupSend(t, "bob", "X", "bob's"), 1, false)
	wantPlaced(t, "carol's send with bob's ID", e.groupSend(t, "carol", "X", "carol's"), 2, false)
	wantPlaced(t, "bob's retry", e.groupSend(t, "bob", "X", "bob's"), 1, true)
	wantPlaced(t, "carol's retry", e.groupSend(t, "carol", "X", "carol's"), 2, true)
	e.holds(t, "sg_team", "bob's", "carol's")
}

// Ensure a client message ID recorded by an earlier version, without its sender, still gets
// its sender's retry its seq after the upgrade, and does not give it to another sender.
func TestClientMsgIDOfAnEarlierVersionIsTheSendersOwn(t *testing.T) {
	t.Parallel()
	before := open(t)
	wantPlaced(t, "bob's send", before.groupSend(t, "bob", "X", "bob's"), 1, false)
	// The store as the earlier version left it: the claim keyed by conversation and ID alone,
	// under the natural _id that version gave it.
	ctx := before.ctx
	if _, err := before.db.Collection(chunkstore.CollectionClientMsgKey).DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	old := bson.D{{Key: "conversation_id", Value: "sg_team"}, {Key: "client_msg_id", Value: "X"}, {Key: "seq", Value: int64(1)}}
	if _, err := before.db.Collection(chunkstore.CollectionClientMsgID).ReplaceOne(ctx, bson.D{{Key: "_id", Value: "sg_team|X"}}, old,
		options.Replace().SetUpsert(true)); err != nil {
		t.Fatal(err)
	}

	e := before.reopen(t)
	wantPlaced(t, "carol's send with bob's ID", e.groupSend(t, "carol", "X", "carol's"), 2, false)
	wantPlaced(t, "bob's retry", e.groupSend(t, "bob", "X", "bob's"), 1, true)
	wantPlaced(t, "carol's retry", e.groupSend(t, "carol", "X", "carol's"), 2, true)
	wantPlaced(t, "bob's second retry", e.groupSend(t, "bob", "X", "bob's"), 1, true)
	e.holds(t, "sg_team", "bob's", "carol's")
}

// Ensure MarkRead moves the read seq up (never down, never past the max seq) and flags the
// newly read messages of the peer as read in a single chat.
func TestMarkRead(t *testing.T) {
	t.Parallel()
	e := open(t)
	const id = "si_alice_bob"
	conv, _ := im.ParseConversationID(id)
	e.send(t, chat("alice", "bob", "a1", "1"), chat("alice", "bob", "a2", "2"))
	load := history.ChunkFunc(e.store.FindChunks) // MongoDB itself stands in for the chunk cache
	read := func(user string, seq *int64) im.SeqState {
		t.Helper()
		st, err := e.in.MarkRead(e.ctx, load, user, conv, seq)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	flags := func() [3]bool {
		t.Helper()
		var out [3]bool
		for i := range out {
			if s := e.slot(t, id, int64(i+1)); s != nil {
				out[i] = s.IsRead
			}
		}
		return out
	}
	one := int64(1)
	if st := read("bob", &one); st.ReadSeq != 1 || st.Unread() != 1 || flags() != [3]bool{true, false, false} {
		t.Fatalf("bob reads seq 1: %+v, flags %v", st, flags())
	}
	if st := read("bob", nil); st.ReadSeq != 2 || st.Unread() != 0 || flags() != [3]bool{true, true, false} {
		t.Fatalf("bob reads all: %+v, flags %v", st, flags())
	}
	if st := read("bob", &one); st.ReadSeq != 2 {
		t.Errorf("reading back to seq 1: %+v; the read seq never goes down", st)
	}
	e.send(t, chat("bob", "alice", "b1", "3"))
	far := int64(99)
	if st := read("alice", &far); st.ReadSeq != 3 || st.MaxSeq != 3 || flags() != [3]bool{true, true, true} {
		t.Errorf("alice reads past the end: %+v, flags %v; want clamped to 3 and bob's message flagged", st, flags())
	}
	negative := int64(-1)
	if _, err := e.in.MarkRead(e.ctx, load, "alice", conv, &negative); im.ErrorCode(err) != im.EINVALID {
		t.Errorf("a negative read seq: %v, want invalid", err)
	}
}

// Ensure who may change messages and history is decided by ingest: a user may not send a
// notification, nor send where access is refused; only the sender or a group's manager may
// revoke or delete for everyone; only a group's owner or admin (not a member, not a
// non-member) may clear for everyone. A refused change changes nothing.
func TestPermissions(t *testing.T) {
	t.Parallel()
	e := open(t)
	if err := e.ledger.SetGroup(e.ctx, "team", []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleMember}}); err != nil {
		t.Fatal(err)
	}
	group, _ := im.ParseConversationID("sg_team")
	actor := func(user string) ingest.Actor {
		role, err := e.ledger.Role(e.ctx, user, group)
		if err != nil {
			t.Fatal(err)
		}
		return ingest.Actor{UserID: user, Role: role}
	}
	allow := func(context.Context, string) error { return nil }

	// Sending.
	note := &im.Message{RecvID: "bob", ContentType: 1400, Content: "x", Options: map[string]bool{im.OptionNotNotification: false}}
	if _, err := e.in.Send(e.ctx, ingest.Sender{UserID: "alice"}, note, allow); im.ErrorCode(err) != im.EFORBIDDEN {
		t.Errorf("a user's notification: %v, want forbidden", err)
	}
	var asked []string
	refuse := func(_ context.Context, conv string) error {
		asked = append(asked, conv)
		return im.Errorf(im.EFORBIDDEN, "not a member")
	}
	if _, err := e.in.Send(e.ctx, ingest.Sender{UserID: "eve"}, &im.Message{GroupID: "team", Content: "x"}, refuse); im.ErrorCode(err) != im.EFORBIDDEN || len(asked) != 1 || asked[0] != "sg_team" {
		t.Errorf("a refused send: %v, access asked for %v", err, asked)
	}
	for _, id := range []string{"n_bob", "si_alice_bob", "sg_team"} {
		if st := e.state(t, "bob", id); st.MaxSeq != 0 {
			t.Errorf("refused sends stored something in %s: %+v", id, st)
		}
	}
	p, err := e.in.Send(e.ctx, ingest.Sender{UserID: "alice"}, &im.Message{SendID: "mallory", GroupID: "team", Content: "g1"}, allow)
	if err != nil || p.Seq != 1 || p.ConversationID != "sg_team" || e.slot(t, "sg_team", 1).Msg.SendID != "alice" {
		t.Fatalf("alice's send: %+v, %v; want seq 1 in sg_team, sent as alice", p, err)
	}
	e.send(t, &im.Message{SendID: "bob", GroupID: "team", Content: "g2"})
	e.send(t, &im.Message{SendID: "alice", GroupID: "team", Content: "g3"})

	// Revoking and deleting for everyone.
	if _, err := e.in.Revoke(e.ctx, actor("bob"), group, 1, 1); im.ErrorCode(err) != im.EFORBIDDEN {
		t.Errorf("a member revoking another's message: %v, want forbidden", err)
	}
	if _, err := e.in.Delete(e.ctx, actor("bob"), group, []int64{1}, true); im.ErrorCode(err) != im.EFORBIDDEN {
		t.Errorf("a member deleting another's message for everyone: %v, want forbidden", err)
	}
	if s := e.slot(t, "sg_team", 1); s.Revoke != nil || s.Msg.Status == im.DeletedMessageStatus {
		t.Errorf("refused changes changed seq 1: %+v", s)
	}
	if _, err := e.in.Revoke(e.ctx, actor("bob"), group, 9, 1); im.ErrorCode(err) != im.ENOTFOUND {
		t.Errorf("revoking past the max seq: %v, want not found", err)
	}
	if _, err := e.in.Revoke(e.ctx, actor("alice"), group, 2, 1); err != nil {
		t.Errorf("the owner revoking a member's message: %v", err)
	}
	if s := e.slot(t, "sg_team", 2); s.Revoke == nil || s.Revoke.UserID != "alice" || s.Revoke.Role != im.RoleOwner {
		t.Errorf("seq 2 after the owner revoked it: %+v", s)
	}
	if _, err := e.in.Delete(e.ctx, actor("bob"), group, []int64{2}, true); err != nil {
		t.Errorf("the sender deleting their message for everyone: %v", err)
	}
	if s := e.slot(t, "sg_team", 2); s.Msg.Status != im.DeletedMessageStatus || s.Msg.Content != "" {
		t.Errorf("seq 2 after bob deleted it for everyone: %+v", s.Msg)
	}
	if _, err := e.in.Delete(e.ctx, actor("bob"), group, []int64{3}, false); err != nil {
		t.Errorf("a member deleting a message for themselves: %v", err)
	}
	if s := e.slot(t, "sg_team", 3); len(s.DelList) != 1 || s.DelList[0] != "bob" || s.Msg.Content != "g3" {
		t.Errorf("seq 3 after bob deleted it for himself: %+v", s)
	}

	// Clearing.
	for _, who := range []string{"bob", "eve"} {
		if _, err := e.in.Clear(e.ctx, actor(who), group, true); im.ErrorCode(err) != im.EFORBIDDEN {
			t.Errorf("%s clearing the group for everyone: %v, want forbidden", who, err)
		}
	}
	if st := e.state(t, "alice", "sg_team"); st.MinSeq != 0 || st.VisibleMin() != 1 {
		t.Errorf("refused clears changed the history: %+v", st)
	}
	st, err := e.in.Clear(e.ctx, actor("bob"), group, false)
	if err != nil || st.VisibleMin() != 4 || st.Unread() != 0 {
		t.Errorf("bob clearing for himself: %+v, %v", st, err)
	}
	if st := e.state(t, "alice", "sg_team"); st.VisibleMin() != 1 {
		t.Errorf("bob's clear reached alice: %+v", st)
	}
	if st, err := e.in.Clear(e.ctx, actor("alice"), group, true); err != nil || st.MinSeq != 4 {
		t.Errorf("the owner clearing for everyone: %+v, %v", st, err)
	}
	single, _ := im.ParseConversationID("si_alice_bob")
	e.send(t, chat("alice", "bob", "s1", "hi"))
	if st, err := e.in.Clear(e.ctx, ingest.Actor{UserID: "bob"}, single, true); err != nil || st.MinSeq != 2 {
		t.Errorf("a single chat's member clearing for everyone: %+v, %v", st, err)
	}
}

// Ensure a send whose caller gives up after its chunk was written still becomes visible and is
// announced: otherwise the message would be stored, its seq never raised or announced, and
// devices would not learn of it unless the sender retried.
func TestSendFinishesWhenTheCallerGivesUp(t *testing.T) {
	sendCtx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	// The caller gives up once its chunk is written: as the next command starts.
	e := openWatched(t, chunkstore.StartedMonitor(func(_ context.Context, cmd, coll string) {
		if (cmd == "update" || cmd == "insert") && coll == chunkstore.CollectionUserConversation {
			giveUp()
		}
	}))
	ctx, ledger, in := e.ctx, e.ledger, e.in

	if _, err := in.Ingest(sendCtx, []*im.Message{chat("alice", "bob", "c1", "hi")}); err != nil {
		t.Fatalf("the send failed although its chunk was written: %v", err)
	}
	if sendCtx.Err() == nil {
		t.Fatal("the caller did not give up: the test did not test anything")
	}
	st, err := ledger.States(ctx, "bob", []string{"si_alice_bob"})
	if err != nil || st[0].MaxSeq != 1 {
		t.Fatalf("bob's state after the send: %+v, %v; want max seq 1", st, err)
	}
	head, err := ledger.Events().Difference(ctx, "bob", im.SyncToken{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ledger.Events().Difference(ctx, "bob", im.SyncToken{User: im.Cursor{Epoch: head.Token.User.Epoch}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range d.Events {
		found = found || (ev.ConversationID == "si_alice_bob" && ev.Seq == 1)
	}
	if !found {
		t.Fatalf("bob's events after the send: %+v; want the new message", d)
	}
}
