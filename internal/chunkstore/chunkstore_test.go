package chunkstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

const conv = "si_alice_bob"

type env struct {
	ctx   context.Context
	store *chunkstore.Store
	db    *mongo.Database
	cmds  *testenv.MongoCommands
}

// open connects to a fresh FerretDB database with a command-counting client and opens the
// store on it. The counters start at zero after Open.
func open(t *testing.T) *env {
	t.Helper()
	m := testenv.Mongo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmds := &testenv.MongoCommands{}
	db := m.Connect(t, cmds.Monitor())
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cmds.Reset()
	return &env{ctx: ctx, store: store, db: db, cmds: cmds}
}

// msg builds the message a test writes at seq; tag tells apart messages for the same seq.
func msg(seq int64, tag string) *im.Message {
	return &im.Message{
		SendID: "alice", RecvID: "bob",
		ClientMsgID: fmt.Sprintf("cm-%d-%s", seq, tag),
		ServerMsgID: fmt.Sprintf("sm-%d-%s", seq, tag),
		SessionType: im.SessionSingle,
		ContentType: 101,
		Content:     fmt.Sprintf("content %d %s", seq, tag),
		Seq:         seq,
		SendTime:    1700000000000 + seq,
		Status:      im.StatusSent,
	}
}

func msgs(from, to int64, tag string) []*im.Message {
	var out []*im.Message
	for s := from; s <= to; s++ {
		out = append(out, msg(s, tag))
	}
	return out
}

func (e *env) write(t *testing.T, conversationID string, ms []*im.Message) []chunkstore.SlotOutcome {
	t.Helper()
	out, err := e.store.WriteMessages(e.ctx, conversationID, ms)
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	if len(out) != len(ms) {
		t.Fatalf("got %d outcomes for %d messages", len(out), len(ms))
	}
	return out
}

func (e *env) chunk(t *testing.T, docID string) *im.Chunk {
	t.Helper()
	cs, err := e.store.FindChunks(e.ctx, []string{docID})
	if err != nil {
		t.Fatalf("FindChunks: %v", err)
	}
	if cs[0] == nil {
		t.Fatalf("chunk %s not found", docID)
	}
	return cs[0]
}

func (e *env) countChunks(t *testing.T) int64 {
	t.Helper()
	n, err := e.db.Collection(chunkstore.CollectionChunks).CountDocuments(e.ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func allStored(t *testing.T, out []chunkstore.SlotOutcome) {
	t.Helper()
	for i, o := range out {
		if o != chunkstore.Stored {
			t.Fatalf("outcome %d = %d, want Stored", i, o)
		}
	}
}

// sameMsg fails unless the slot holds exactly want.
func sameMsg(t *testing.T, where string, slot *im.Slot, want *im.Message) {
	t.Helper()
	if slot == nil || slot.Msg == nil {
		t.Fatalf("%s: empty slot, want message %q", where, want.ClientMsgID)
	}
	got := slot.Msg
	if got.ClientMsgID != want.ClientMsgID || got.Content != want.Content || got.Seq != want.Seq ||
		got.SendID != want.SendID || got.ServerMsgID != want.ServerMsgID || got.SendTime != want.SendTime {
		t.Fatalf("%s: slot holds %+v, want %+v", where, *got, *want)
	}
}

// Ensure 250 messages land in exactly three chunks, each message in the slot its seq addresses.
func TestWriteMessagesFillsChunks(t *testing.T) {
	t.Parallel()
	e := open(t)
	written := msgs(1, 250, "a")
	allStored(t, e.write(t, conv, written))

	if n := e.countChunks(t); n != 3 {
		t.Fatalf("%d chunk documents, want 3", n)
	}
	ids := []string{conv + ":0", conv + ":1", conv + ":2"}
	cs, err := e.store.FindChunks(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if c == nil || c.DocID != ids[i] || len(c.Slots) != im.ChunkSize {
			t.Fatalf("chunk %d = %+v, want %s with %d slots", i, c, ids[i], im.ChunkSize)
		}
	}
	for _, tc := range []struct {
		seq   int64
		chunk int
		slot  int
	}{{1, 0, 0}, {100, 0, 99}, {101, 1, 0}, {250, 2, 49}} {
		sameMsg(t, fmt.Sprintf("seq %d", tc.seq), &cs[tc.chunk].Slots[tc.slot], written[tc.seq-1])
	}
	for seq := int64(1); seq <= 250; seq++ {
		sameMsg(t, fmt.Sprintf("seq %d", seq), cs[im.ChunkIndex(seq)].Slot(seq), written[seq-1])
	}
	for i := 50; i < im.ChunkSize; i++ {
		if s := cs[2].Slots[i]; s.Msg != nil || s.Revoke != nil || len(s.DelList) != 0 || s.IsRead {
			t.Fatalf("slot %d of chunk 2 should be empty, got %+v", i, s)
		}
	}
}

// Ensure a batch of 100 consecutive messages costs one write per chunk it touches.
func TestWriteMessagesWriteCount(t *testing.T) {
	t.Parallel()
	e := open(t)

	t.Run("1..100 is one insert", func(t *testing.T) {
		const c = "si_a1_b1"
		e.cmds.Reset()
		allStored(t, e.write(t, c, msgs(1, 100, "a")))
		if got := e.cmds.Writes(chunkstore.CollectionChunks); got != 1 {
			t.Fatalf("%d write commands, want 1", got)
		}
		if got := e.cmds.Count(chunkstore.CollectionChunks, "insert"); got != 1 {
			t.Fatalf("%d inserts, want 1", got)
		}
		if got := e.cmds.Count(chunkstore.CollectionChunks, "find"); got != 0 {
			t.Fatalf("%d finds, want 0", got)
		}
	})

	t.Run("51..150 after 1..50 is one update and one insert", func(t *testing.T) {
		const c = "si_a2_b2"
		allStored(t, e.write(t, c, msgs(1, 50, "a")))
		e.cmds.Reset()
		written := msgs(51, 150, "a")
		allStored(t, e.write(t, c, written))
		if got := e.cmds.Writes(chunkstore.CollectionChunks); got != 2 {
			t.Fatalf("%d write commands, want 2", got)
		}
		if u, i := e.cmds.Count(chunkstore.CollectionChunks, "update"), e.cmds.Count(chunkstore.CollectionChunks, "insert"); u != 1 || i != 1 {
			t.Fatalf("%d updates and %d inserts, want 1 and 1", u, i)
		}
		// On FerretDB the update's slot condition is tested on the chunk read by _id under the
		// document's lock (conditional_update.go).
		if got := e.cmds.Count(chunkstore.CollectionChunks, "find"); got != 1 {
			t.Fatalf("%d finds, want 1", got)
		}
		sameMsg(t, "seq 51", e.chunk(t, c+":0").Slot(51), written[0])
		sameMsg(t, "seq 150", e.chunk(t, c+":1").Slot(150), written[99])
	})

	// Seqs start at 1, so a batch never starts mid-chunk in an empty conversation; when it
	// does, the miss on chunk 0 costs a find and an insert (on FerretDB the find that tests the
	// update's slot condition finds no chunk, so no update is sent).
	t.Run("51..150 in an empty conversation falls back to insert", func(t *testing.T) {
		const c = "si_a3_b3"
		e.cmds.Reset()
		written := msgs(51, 150, "a")
		allStored(t, e.write(t, c, written))
		col := chunkstore.CollectionChunks
		if u, i, f := e.cmds.Count(col, "update"), e.cmds.Count(col, "insert"), e.cmds.Count(col, "find"); u != 0 || i != 2 || f != 1 {
			t.Fatalf("%d updates, %d inserts, %d finds; want 0, 2, 1", u, i, f)
		}
		sameMsg(t, "seq 51", e.chunk(t, c+":0").Slot(51), written[0])
		sameMsg(t, "seq 150", e.chunk(t, c+":1").Slot(150), written[99])
		if s := e.chunk(t, c+":0").Slot(50); s.Msg != nil {
			t.Fatalf("seq 50 holds %+v, want empty", *s.Msg)
		}
	})
}

// Ensure writing one message per call costs exactly one write command per message, including
// the calls that create a chunk, and on FerretDB one find by _id per update (the slot
// condition is tested on the chunk read under the document's lock).
func TestWriteMessagesOneAtATime(t *testing.T) {
	t.Parallel()
	e := open(t)
	written := msgs(1, 120, "a")
	for _, m := range written {
		allStored(t, e.write(t, conv, []*im.Message{m}))
	}
	col := chunkstore.CollectionChunks
	if got := e.cmds.Writes(col); got != 120 {
		t.Fatalf("%d write commands, want 120", got)
	}
	if i, u := e.cmds.Count(col, "insert"), e.cmds.Count(col, "update"); i != 2 || u != 118 {
		t.Fatalf("%d inserts and %d updates, want 2 and 118", i, u)
	}
	if got := e.cmds.Count(col, "find"); got != 118 {
		t.Fatalf("%d finds, want 118", got)
	}
	if n := e.countChunks(t); n != 2 {
		t.Fatalf("%d chunk documents, want 2", n)
	}
	for _, m := range written {
		sameMsg(t, fmt.Sprintf("seq %d", m.Seq), e.chunk(t, im.DocID(conv, m.Seq)).Slot(m.Seq), m)
	}
}

// Ensure concurrent writers into one new chunk neither lose nor duplicate messages.
func TestWriteMessagesConcurrent(t *testing.T) {
	t.Parallel()
	const writers = 8

	t.Run("disjoint seqs", func(t *testing.T) {
		t.Parallel()
		e := open(t)
		const last = 64
		written := msgs(1, last, "a")
		outcomes := make([]chunkstore.SlotOutcome, last+1)
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := int64(w + 1); seq <= last; seq += writers {
					out, err := e.store.WriteMessages(e.ctx, conv, []*im.Message{written[seq-1]})
					if err != nil {
						errs <- fmt.Errorf("writer %d seq %d: %w", w, seq, err)
						return
					}
					outcomes[seq] = out[0] // each seq has one writer
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := e.countChunks(t); n != 1 {
			t.Fatalf("%d chunk documents, want 1", n)
		}
		c := e.chunk(t, conv+":0")
		for seq := int64(1); seq <= last; seq++ {
			if outcomes[seq] != chunkstore.Stored {
				t.Errorf("seq %d: outcome %d, want Stored", seq, outcomes[seq])
			}
			sameMsg(t, fmt.Sprintf("seq %d", seq), c.Slot(seq), written[seq-1])
		}
		for seq := int64(last + 1); seq <= im.ChunkSize; seq++ {
			if c.Slot(seq).Msg != nil {
				t.Fatalf("seq %d holds %+v, want empty", seq, *c.Slot(seq).Msg)
			}
		}
	})

	sameSeq := func(t *testing.T, e *env, seq int64) {
		var wg sync.WaitGroup
		outcomes := make([]chunkstore.SlotOutcome, writers)
		errs := make([]error, writers)
		cands := make([]*im.Message, writers)
		for w := range cands {
			cands[w] = msg(seq, fmt.Sprintf("w%d", w))
		}
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := e.store.WriteMessages(e.ctx, conv, []*im.Message{cands[w]})
				if err == nil {
					outcomes[w] = out[0]
				}
				errs[w] = err
			}()
		}
		wg.Wait()
		winner := -1
		for w := 0; w < writers; w++ {
			if errs[w] != nil {
				t.Fatalf("writer %d: %v", w, errs[w])
			}
			switch outcomes[w] {
			case chunkstore.Stored:
				if winner >= 0 {
					t.Fatalf("writers %d and %d both Stored seq %d", winner, w, seq)
				}
				winner = w
			case chunkstore.Taken:
			default:
				t.Fatalf("writer %d: outcome %d, want Stored or Taken", w, outcomes[w])
			}
		}
		if winner < 0 {
			t.Fatalf("no writer Stored seq %d", seq)
		}
		sameMsg(t, "winner's slot", e.chunk(t, im.DocID(conv, seq)).Slot(seq), cands[winner])
	}

	t.Run("same seq, new chunk at its first slot", func(t *testing.T) {
		t.Parallel()
		e := open(t)
		sameSeq(t, e, 1)
	})
	t.Run("same seq, new chunk mid-chunk", func(t *testing.T) {
		t.Parallel()
		e := open(t)
		sameSeq(t, e, 5)
	})
	t.Run("same seq, existing chunk", func(t *testing.T) {
		t.Parallel()
		e := open(t)
		allStored(t, e.write(t, conv, []*im.Message{msg(1, "first")}))
		sameSeq(t, e, 5)
	})
}

// Ensure a slot that holds a message is never overwritten, and a retry is recognised.
func TestWriteMessagesNeverOverwrites(t *testing.T) {
	t.Parallel()
	e := open(t)
	a, b := msg(5, "A"), msg(5, "B")
	if out := e.write(t, conv, []*im.Message{a}); out[0] != chunkstore.Stored {
		t.Fatalf("first write: outcome %d, want Stored", out[0])
	}
	if out := e.write(t, conv, []*im.Message{b}); out[0] != chunkstore.Taken {
		t.Fatalf("other message at the same seq: outcome %d, want Taken", out[0])
	}
	sameMsg(t, "after Taken", e.chunk(t, conv+":0").Slot(5), a)
	if out := e.write(t, conv, []*im.Message{a}); out[0] != chunkstore.AlreadyStored {
		t.Fatalf("retry: outcome %d, want AlreadyStored", out[0])
	}
	sameMsg(t, "after retry", e.chunk(t, conv+":0").Slot(5), a)

	// Ensure a batch mixing a taken seq, a retry and a free seq settles each one.
	c6, c7 := msg(6, "A"), msg(7, "A")
	out := e.write(t, conv, []*im.Message{b, c6})
	if out[0] != chunkstore.Taken || out[1] != chunkstore.Stored {
		t.Fatalf("batch {B@5, 6} outcomes %v, want [Taken Stored]", out)
	}
	out = e.write(t, conv, []*im.Message{c7, a, c6})
	if out[0] != chunkstore.Stored || out[1] != chunkstore.AlreadyStored || out[2] != chunkstore.AlreadyStored {
		t.Fatalf("batch {7, A@5, 6} outcomes %v, want [Stored AlreadyStored AlreadyStored]", out)
	}
	c := e.chunk(t, conv+":0")
	sameMsg(t, "seq 5", c.Slot(5), a)
	sameMsg(t, "seq 6", c.Slot(6), c6)
	sameMsg(t, "seq 7", c.Slot(7), c7)
	if n := e.countChunks(t); n != 1 {
		t.Fatalf("%d chunk documents, want 1", n)
	}
}

// Ensure revoke, delete for one user, delete for everyone and read marks change only their
// part of a slot, and read back through im.ViewSlot as intended.
func TestSlotMutations(t *testing.T) {
	t.Parallel()
	e := open(t)
	written := msgs(1, 4, "a")
	allStored(t, e.write(t, conv, written))

	t.Run("revoke", func(t *testing.T) {
		r := im.Revoke{Role: 20, UserID: "alice", Nickname: "Alice", Time: 1700000009999}
		ok, err := e.store.Revoke(e.ctx, conv, 1, r)
		if err != nil || !ok {
			t.Fatalf("Revoke = %v, %v; want true", ok, err)
		}
		ok, err = e.store.Revoke(e.ctx, conv, 1, im.Revoke{UserID: "bob"})
		if err != nil || ok {
			t.Fatalf("second Revoke = %v, %v; want false", ok, err)
		}
		ok, err = e.store.Revoke(e.ctx, conv, 50, r)
		if err != nil || ok {
			t.Fatalf("Revoke of an empty slot = %v, %v; want false", ok, err)
		}
		slot := e.chunk(t, conv+":0").Slot(1)
		sameMsg(t, "revoked slot", slot, written[0])
		if slot.Revoke == nil || *slot.Revoke != r {
			t.Fatalf("revoke = %+v, want %+v", slot.Revoke, r)
		}
		if len(slot.DelList) != 0 || slot.IsRead {
			t.Fatalf("revoke changed other fields: %+v", slot)
		}
		v := im.ViewSlot(conv, 1, slot, "bob")
		if v.Status != im.StatusRevoked || v.Message == nil || v.Message.Content != "" ||
			v.Message.ClientMsgID != written[0].ClientMsgID || v.Revoke == nil || v.Revoke.UserID != "alice" {
			t.Fatalf("view of revoked slot = %+v", v)
		}
	})

	t.Run("delete for user", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if err := e.store.DeleteForUser(e.ctx, conv, []int64{2}, "bob"); err != nil {
				t.Fatal(err)
			}
		}
		slot := e.chunk(t, conv+":0").Slot(2)
		sameMsg(t, "deleted-for-bob slot", slot, written[1])
		if len(slot.DelList) != 1 || slot.DelList[0] != "bob" {
			t.Fatalf("del_list = %q, want [bob]", slot.DelList)
		}
		if slot.Revoke != nil {
			t.Fatalf("revoke = %+v, want nil", slot.Revoke)
		}
		if v := im.ViewSlot(conv, 2, slot, "bob"); v.Status != im.StatusDeleted || v.Message.Content != "" {
			t.Fatalf("bob's view = %+v, want DELETED without content", v)
		}
		if v := im.ViewSlot(conv, 2, slot, "alice"); v.Status != im.StatusOK || v.Message.Content != written[1].Content {
			t.Fatalf("alice's view = %+v, want OK with content", v)
		}
	})

	t.Run("delete for everyone", func(t *testing.T) {
		if err := e.store.DeleteForEveryone(e.ctx, conv, []*im.Message{written[2]}); err != nil {
			t.Fatal(err)
		}
		slot := e.chunk(t, conv+":0").Slot(3)
		if slot == nil || slot.Msg == nil {
			t.Fatal("tombstone missing")
		}
		m := slot.Msg
		if m.Status != im.DeletedMessageStatus || m.Content != "" || m.ContentType != 0 {
			t.Fatalf("tombstone = %+v, want status %d and no content", *m, im.DeletedMessageStatus)
		}
		if m.ClientMsgID != written[2].ClientMsgID || m.SendID != "alice" || m.Seq != 3 || m.SendTime != written[2].SendTime {
			t.Fatalf("tombstone lost the message's identity: %+v", *m)
		}
		for _, viewer := range []string{"alice", "bob"} {
			if v := im.ViewSlot(conv, 3, slot, viewer); v.Status != im.StatusDeleted || v.Message.Content != "" {
				t.Fatalf("%s's view = %+v, want DELETED", viewer, v)
			}
		}
		// The tombstone still occupies the seq.
		if out := e.write(t, conv, []*im.Message{msg(3, "again")}); out[0] != chunkstore.Taken {
			t.Fatalf("write over a tombstone: outcome %d, want Taken", out[0])
		}
	})

	t.Run("mark read", func(t *testing.T) {
		if err := e.store.MarkRead(e.ctx, conv, []int64{4}); err != nil {
			t.Fatal(err)
		}
		c := e.chunk(t, conv+":0")
		if !c.Slot(4).IsRead {
			t.Fatal("seq 4 not marked read")
		}
		sameMsg(t, "read slot", c.Slot(4), written[3])
		if c.Slot(2).IsRead {
			t.Fatal("seq 2 marked read, only 4 was")
		}
		if v := im.ViewSlot(conv, 4, c.Slot(4), "bob"); v.Status != im.StatusOK || !v.IsRead {
			t.Fatalf("view of read slot = %+v", v)
		}
		// The revoke and deletion from the other subtests are untouched.
		if c.Slot(1).Revoke == nil || len(c.Slot(2).DelList) != 1 || c.Slot(3).Msg.Status != im.DeletedMessageStatus {
			t.Fatalf("mark read disturbed other slots: %+v %+v %+v", c.Slot(1), c.Slot(2), c.Slot(3))
		}
	})
}

// Ensure seq documents only move up and read back as written.
func TestSeqDocuments(t *testing.T) {
	t.Parallel()
	e := open(t)

	t.Run("reserve blocks", func(t *testing.T) {
		const c = "sg_reserve"
		for i, want := range []int64{100, 200} {
			doc, err := e.store.ReserveSeqBlock(e.ctx, c, 100)
			if err != nil {
				t.Fatal(err)
			}
			if doc.ReservedSeq != want || doc.MaxSeq != 0 || doc.ConversationID != c {
				t.Fatalf("block %d: %+v, want reserved_seq %d", i, doc, want)
			}
		}
		// Ensure a reservation moves past stored messages it does not cover.
		if err := e.store.RaiseMaxSeqs(e.ctx, map[string]chunkstore.StoredMax{c: {Seq: 500}}); err != nil {
			t.Fatal(err)
		}
		doc, err := e.store.ReserveSeqBlock(e.ctx, c, 100)
		if err != nil {
			t.Fatal(err)
		}
		if doc.ReservedSeq != 600 || doc.MaxSeq != 500 {
			t.Fatalf("after max 500: %+v, want reserved_seq 600", doc)
		}
	})

	t.Run("max seqs", func(t *testing.T) {
		const c1, c2 = "sg_max1", "sg_max2"
		if err := e.store.RaiseMaxSeqs(e.ctx, map[string]chunkstore.StoredMax{c1: {Seq: 50}, c2: {Seq: 7}}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RaiseMaxSeqs(e.ctx, map[string]chunkstore.StoredMax{c1: {Seq: 30}, c2: {Seq: 9}}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RaiseMinSeq(e.ctx, c1, 10); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RaiseMinSeq(e.ctx, c1, 4); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.FindConversationSeqs(e.ctx, []string{c1, c2, "sg_none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d documents, want 2: %+v", len(got), got)
		}
		if d := got[c1]; d.MaxSeq != 50 || d.MinSeq != 10 || d.ReservedSeq != 0 {
			t.Fatalf("%s = %+v, want max 50 min 10", c1, d)
		}
		if d := got[c2]; d.MaxSeq != 9 {
			t.Fatalf("%s = %+v, want max 9", c2, d)
		}
	})

	t.Run("read seqs", func(t *testing.T) {
		k1 := chunkstore.UserSeqKey{ConversationID: "sg_r1", UserID: "u1"}
		k2 := chunkstore.UserSeqKey{ConversationID: "sg_r2", UserID: "u2"}
		cross := chunkstore.UserSeqKey{ConversationID: "sg_r1", UserID: "u2"}
		if err := e.store.RaiseReadSeqs(e.ctx, map[chunkstore.UserSeqKey]int64{k1: 5, k2: 8, cross: 3}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RaiseReadSeqs(e.ctx, map[chunkstore.UserSeqKey]int64{k1: 2, k2: 11}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RaiseUserMinSeqs(e.ctx, map[chunkstore.UserSeqKey]int64{k1: 4}); err != nil {
			t.Fatal(err)
		}
		missing := chunkstore.UserSeqKey{ConversationID: "sg_r2", UserID: "u1"}
		got, err := e.store.FindUserSeqs(e.ctx, []chunkstore.UserSeqKey{k1, k2, missing})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d states, want 2 (the unasked cross pair dropped): %+v", len(got), got)
		}
		if s := got[k1]; s.ReadSeq != 5 || s.MinSeq != 4 || s.UserID != "u1" || s.ConversationID != "sg_r1" {
			t.Fatalf("k1 = %+v, want read 5 min 4", s)
		}
		if s := got[k2]; s.ReadSeq != 11 || s.MinSeq != 0 {
			t.Fatalf("k2 = %+v, want read 11", s)
		}
	})

	// FerretDB applies $max by reading and rewriting the document, so concurrent raises of
	// one document are where a lost update would show.
	t.Run("concurrent raises", func(t *testing.T) {
		const c = "sg_race"
		k := chunkstore.UserSeqKey{ConversationID: c, UserID: "u1"}
		for round := int64(0); round < 5; round++ { // round 0 creates the documents
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for w := int64(0); w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v := 100*round + 10 + w
					if errs[w] = e.store.RaiseMaxSeqs(e.ctx, map[string]chunkstore.StoredMax{c: {Seq: v}}); errs[w] == nil {
						errs[w] = e.store.RaiseReadSeqs(e.ctx, map[chunkstore.UserSeqKey]int64{k: v})
					}
				}()
			}
			wg.Wait()
			for w, err := range errs {
				if err != nil {
					t.Fatalf("round %d writer %d: %v", round, w, err)
				}
			}
			want := 100*round + 17
			got, err := e.store.FindConversationSeqs(e.ctx, []string{c})
			if err != nil {
				t.Fatal(err)
			}
			if got[c].MaxSeq != want {
				t.Fatalf("round %d: max seq = %d, want %d", round, got[c].MaxSeq, want)
			}
			users, err := e.store.FindUserSeqs(e.ctx, []chunkstore.UserSeqKey{k})
			if err != nil {
				t.Fatal(err)
			}
			if users[k].ReadSeq != want {
				t.Fatalf("round %d: read seq = %d, want %d", round, users[k].ReadSeq, want)
			}
		}
		for _, col := range []string{chunkstore.CollectionSeqs, chunkstore.CollectionUserSeqs} {
			n, err := e.db.Collection(col).CountDocuments(e.ctx, bson.D{{Key: "conversation_id", Value: c}})
			if err != nil || n != 1 {
				t.Fatalf("%d documents in %s (%v), want 1", n, col, err)
			}
		}
	})

	t.Run("concurrent reservations hand out distinct blocks", func(t *testing.T) {
		const c = "sg_reserve_race"
		var wg sync.WaitGroup
		ends := make([]int64, 8)
		errs := make([]error, 8)
		for w := range ends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				doc, err := e.store.ReserveSeqBlock(e.ctx, c, 100)
				ends[w], errs[w] = doc.ReservedSeq, err
			}()
		}
		wg.Wait()
		seen := map[int64]bool{}
		for w, end := range ends {
			if errs[w] != nil {
				t.Fatalf("writer %d: %v", w, errs[w])
			}
			if end%100 != 0 || end < 100 || end > 800 || seen[end] {
				t.Fatalf("block ends %v: want each of 100..800 once", ends)
			}
			seen[end] = true
		}
	})
}

// Ensure client message IDs are claimed once per sender, and group membership round-trips.
func TestClientMsgIDsAndGroups(t *testing.T) {
	t.Parallel()
	e := open(t)

	t.Run("client message ids", func(t *testing.T) {
		k1 := chunkstore.ClientMsgKey{ConversationID: conv, SendID: "alice", ClientMsgID: "c1"}
		k2 := chunkstore.ClientMsgKey{ConversationID: conv, SendID: "alice", ClientMsgID: "c2"}
		other := chunkstore.ClientMsgKey{ConversationID: "si_alice_carol", SendID: "alice", ClientMsgID: "c1"}
		bobs := chunkstore.ClientMsgKey{ConversationID: conv, SendID: "bob", ClientMsgID: "c1"}
		lost, err := e.store.ClaimClientMsgIDs(e.ctx, map[chunkstore.ClientMsgKey]int64{k1: 7})
		if err != nil || len(lost) != 0 {
			t.Fatalf("first claim = %v, %v; want empty", lost, err)
		}
		lost, err = e.store.ClaimClientMsgIDs(e.ctx, map[chunkstore.ClientMsgKey]int64{k1: 9, k2: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(lost) != 1 || lost[k1] != 7 {
			t.Fatalf("second claim = %v, want {k1: 7}", lost)
		}
		found, err := e.store.FindClientMsgSeqs(e.ctx, []chunkstore.ClientMsgKey{k1, k2, other, bobs})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 2 || found[k1] != (chunkstore.ClientMsgSeq{Seq: 7}) || found[k2] != (chunkstore.ClientMsgSeq{Seq: 10}) {
			t.Fatalf("found %v, want {k1: 7, k2: 10} and nothing for another sender's c1", found)
		}
		// Another sender's message with the same ID is another message: its claim is its own.
		lost, err = e.store.ClaimClientMsgIDs(e.ctx, map[chunkstore.ClientMsgKey]int64{bobs: 11})
		if err != nil || len(lost) != 0 {
			t.Fatalf("bob's claim of alice's c1 = %v, %v; want his own", lost, err)
		}
		if err := e.store.MoveClientMsgSeq(e.ctx, k2, 12); err != nil {
			t.Fatal(err)
		}
		found, err = e.store.FindClientMsgSeqs(e.ctx, []chunkstore.ClientMsgKey{k1, k2, bobs})
		if err != nil || found[k1].Seq != 7 || found[k2].Seq != 12 || found[bobs].Seq != 11 {
			t.Fatalf("after move: %v, %v; want k1 at 7, k2 at 12, bob's c1 at 11", found, err)
		}

		// By conversation and ID alone (a quote carries no sender): every sender's claim,
		// newest first, none of another conversation's.
		seqs, err := e.store.FindClientMsgIDSeqs(e.ctx, conv, "c1")
		if err != nil || !slices.Equal(seqs, []int64{11, 7}) {
			t.Fatalf("claims of c1 = %v, %v; want [11 7]", seqs, err)
		}
		if seqs, err := e.store.FindClientMsgIDSeqs(e.ctx, conv, "c9"); err != nil || len(seqs) != 0 {
			t.Fatalf("claims of an unknown ID = %v, %v; want none", seqs, err)
		}
		crowd := map[chunkstore.ClientMsgKey]int64{}
		for i := range im.MaxClientMsgIDSeqs + 5 {
			crowd[chunkstore.ClientMsgKey{ConversationID: conv, SendID: fmt.Sprintf("u%d", i), ClientMsgID: "same"}] = int64(100 + i)
		}
		if _, err := e.store.ClaimClientMsgIDs(e.ctx, crowd); err != nil {
			t.Fatal(err)
		}
		seqs, err = e.store.FindClientMsgIDSeqs(e.ctx, conv, "same")
		if err != nil || len(seqs) != im.MaxClientMsgIDSeqs || seqs[0] != 100+im.MaxClientMsgIDSeqs+4 || !slices.IsSortedFunc(seqs, func(a, b int64) int { return int(b - a) }) {
			t.Fatalf("claims of an ID %d senders share = %v, %v; want the newest %d, newest first", len(crowd), seqs, err, im.MaxClientMsgIDSeqs)
		}
	})

	t.Run("group members", func(t *testing.T) {
		const g = "team"
		members := []chunkstore.GroupMember{
			{GroupID: g, UserID: "alice", Role: im.RoleOwner},
			{GroupID: g, UserID: "bob", Role: im.RoleMember},
			{GroupID: g, UserID: "carol", Role: im.RoleMember},
		}
		if err := e.store.ApplyGroupMembers(e.ctx, g, nil, members); err != nil {
			t.Fatal(err)
		}
		if err := e.store.ApplyGroupMembers(e.ctx, "other", nil, []chunkstore.GroupMember{{GroupID: "other", UserID: "bob", Role: im.RoleAdmin}}); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.FindGroupMemberships(e.ctx, "bob", []string{g, "other", "none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[g].Role != im.RoleMember || got["other"].Role != im.RoleAdmin || got[g].UserID != "bob" {
			t.Fatalf("bob's memberships = %+v", got)
		}

		// Bob leaves, carol becomes admin.
		before, err := e.store.GroupMembers(e.ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.ApplyGroupMembers(e.ctx, g, before, []chunkstore.GroupMember{
			{GroupID: g, UserID: "alice", Role: im.RoleOwner},
			{GroupID: g, UserID: "carol", Role: im.RoleAdmin},
		}); err != nil {
			t.Fatal(err)
		}
		got, err = e.store.FindGroupMemberships(e.ctx, "bob", []string{g, "other"})
		if err != nil {
			t.Fatal(err)
		}
		if _, in := got[g]; in || len(got) != 1 {
			t.Fatalf("bob's memberships after removal = %+v, want only other", got)
		}
		all, err := e.store.GroupMembers(e.ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]int32{}
		for _, m := range all {
			roles[m.UserID] = m.Role
		}
		if len(all) != 2 || roles["alice"] != im.RoleOwner || roles["carol"] != im.RoleAdmin {
			t.Fatalf("members = %+v, want alice owner and carol admin", all)
		}
	})
}

// Ensure FindChunks answers in one find, aligned with the requested IDs, nil for missing ones.
func TestFindChunksAligned(t *testing.T) {
	t.Parallel()
	e := open(t)
	written := append(msgs(1, 2, "a"), msgs(101, 101, "a")...)
	allStored(t, e.write(t, conv, written))
	e.cmds.Reset()

	ids := []string{conv + ":2", conv + ":1", "si_alice_carol:0", conv + ":0", conv + ":1"}
	cs, err := e.store.FindChunks(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	// FerretDB scans for a $in even on _id, so each distinct chunk is one find by _id, sent
	// concurrently.
	if got := e.cmds.Count(chunkstore.CollectionChunks, "find"); got != 4 {
		t.Fatalf("%d find commands, want 4", got)
	}
	if len(cs) != len(ids) {
		t.Fatalf("%d results for %d ids", len(cs), len(ids))
	}
	for i, id := range ids {
		wantNil := i == 0 || i == 2
		if (cs[i] == nil) != wantNil {
			t.Fatalf("result %d (%s) = %v, want nil=%v", i, id, cs[i], wantNil)
		}
		if cs[i] != nil && cs[i].DocID != id {
			t.Fatalf("result %d is %s, want %s", i, cs[i].DocID, id)
		}
	}
	sameMsg(t, "seq 101", cs[1].Slot(101), written[2])
	sameMsg(t, "seq 2", cs[3].Slot(2), written[1])
	sameMsg(t, "seq 101 again", cs[4].Slot(101), written[2])

	e.cmds.Reset()
	if cs, err := e.store.FindChunks(e.ctx, nil); err != nil || len(cs) != 0 {
		t.Fatalf("FindChunks(nil) = %v, %v", cs, err)
	}
	if got := e.cmds.Count(chunkstore.CollectionChunks, "find"); got != 0 {
		t.Fatalf("FindChunks(nil) sent %d finds, want 0", got)
	}
}
