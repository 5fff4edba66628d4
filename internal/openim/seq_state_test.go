package openim_test

import (
	"fmt"
	"testing"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// sendBatches sends n text messages from sender in the given batch sizes, as msgtransfer
// hands OpenIM's allocator one batch at a time; it returns the messages.
func sendBatches(d *deployment, conv string, msg func(i int) *openimtest.MsgData, sizes ...int) []*openimtest.MsgData {
	var all []*openimtest.MsgData
	for _, n := range sizes {
		batch := make([]*openimtest.MsgData, n)
		for i := range batch {
			batch[i] = msg(len(all) + i)
		}
		d.Send(conv, batch...)
		all = append(all, batch...)
	}
	return all
}

func seqDoc(t *testing.T, d *deployment, conv string) (maxSeq, minSeq any) {
	t.Helper()
	var doc map[string]any
	if err := d.DB.Collection("seq").FindOne(ctx, map[string]string{"conversation_id": conv}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc["max_seq"], doc["min_seq"]
}

// The numbers OpenIM shows for a single chat and a group whose seq.max_seq lies above the last
// message (issue 9: 261 for a chat ending at 250, 137 for a group ending at 130), for members,
// a reader whose read seq MongoDB has not caught up with, and a member who left.
func TestStatesReportOpenIMsMaxSeqNotItsReservedBlock(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	// Batches of 61, 50, 100 and 39: blocks of 50+n make seq.max_seq 261 (111, then +150).
	chatMsgs := sendBatches(d, chat, func(i int) *openimtest.MsgData {
		return openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("m", i+1)))
	}, 61, 50, 100, 39)
	if max, _ := seqDoc(t, d, chat); max != int64(261) {
		t.Fatalf("fixture: seq.max_seq is %v (%T), want int64 261", max, max)
	}
	d.SetReadSeq(chat, "b", 200)     // b read up to 200: Redis only...
	d.PersistReadSeq(chat, "b", 150) // ...MongoDB has an older copy

	for _, m := range []string{"a", "c", "e"} {
		d.AddGroupMember("g", m, openimtest.RoleMember)
	}
	group := openimtest.GroupConversationID("g")
	// Batches of 37 and 93: a block of 100+37 makes seq.max_seq 137.
	sendBatches(d, group, func(i int) *openimtest.MsgData {
		return openimtest.Group("a", "g", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("g", i+1)))
	}, 37, 93)
	if max, _ := seqDoc(t, d, group); max != int64(137) {
		t.Fatalf("fixture: group seq.max_seq is %v, want 137", max)
	}
	d.PersistReadSeq(group, "c", 30) // c's read seq only in MongoDB (Redis lost it, say)
	d.QuitGroup("g", "e")            // e may read up to 130 from now on
	sendBatches(d, group, func(i int) *openimtest.MsgData {
		return openimtest.Group("a", "g", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("late", i)))
	}, 10)

	s := d.open(openim.Options{})
	check := func(user, conv string, maxSeq, readSeq, unread int64) im.SeqState {
		t.Helper()
		st, err := s.States(ctx, user, []string{conv})
		if err != nil {
			t.Fatal(err)
		}
		got := st[0]
		if got.ConversationID != conv || got.MaxSeq != maxSeq || got.ReadSeq != readSeq || got.Unread() != unread {
			t.Errorf("%s in %s: maxSeq %d readSeq %d unread %d, want %d %d %d", user, conv, got.MaxSeq, got.ReadSeq, got.Unread(), maxSeq, readSeq, unread)
		}
		return got
	}
	st := check("b", chat, 250, 200, 50)
	check("a", chat, 250, 250, 0) // a sent everything: OpenIM raised a's read seq on each send
	if allocated, _ := d.Redis.HGet(ctx, "MALLOC_SEQ:"+chat, "TIME").Int64(); st.LastTime != allocated || allocated < chatMsgs[210].SendTime {
		t.Errorf("chat activity %d, want MALLOC_SEQ's TIME %d, the last allocation", st.LastTime, allocated)
	}
	check("c", group, 140, 30, 110)
	check("e", group, 130, 0, 130) // left at 130: nothing after counts, nothing after is readable
	check("a", group, 140, 140, 0)

	// A batch: one Redis round trip, one query each on seq and seq_user, none on msg.
	states, err := s.States(ctx, "b", []string{chat, group, "n_a_b", "si_b_zz"})
	if err != nil {
		t.Fatal(err)
	}
	if states[2] != (im.SeqState{ConversationID: "n_a_b"}) || states[3] != (im.SeqState{ConversationID: "si_b_zz"}) {
		t.Errorf("conversations OpenIM has no record of: %+v %+v", states[2], states[3])
	}
	d.trips.Take()
	d.cmds.Reset()
	if _, err := s.States(ctx, "b", []string{chat, group, "n_a_b", "si_b_zz"}); err != nil {
		t.Fatal(err)
	}
	if trips, seqQ, userQ, msgQ := len(d.trips.Take()), d.cmds.Count("seq", "find"), d.cmds.Count("seq_user", "find"), d.cmds.Count("msg", "find"); trips != 1 || seqQ != 1 || userQ != 1 || msgQ != 0 {
		t.Errorf("States of 4 conversations: %d round trips, %d seq, %d seq_user, %d msg queries; want 1, 1, 1, 0", trips, seqQ, userQ, msgQ)
	}

	// Floors: clear for everyone (seq.min_seq) and clear for b alone (seq_user.min_seq).
	d.SetMinSeq(chat, 101)
	d.SetUserMinSeq(chat, "b", 221)
	st = check("b", chat, 250, 200, 30)
	if st.MinSeq != 101 || st.UserMinSeq != 221 || st.VisibleMin() != 221 {
		t.Errorf("floors: min %d user min %d visible from %d, want 101, 221, 221", st.MinSeq, st.UserMinSeq, st.VisibleMin())
	}
}

// When OpenIM's Redis has lost MALLOC_SEQ, the max seq is the highest slot that holds a
// message, found from seq.max_seq's chunk downwards, never seq.max_seq itself; once OpenIM has
// reseeded the key (from seq.max_seq, leaving a hole), msggate shows OpenIM's number and hole.
func TestStatesWithoutMallocSeqFindTheLastMessage(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	msgs := sendBatches(d, chat, func(i int) *openimtest.MsgData {
		return openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("m", i+1)))
	}, 61, 50, 100, 39) // 250 messages, seq.max_seq 261
	d.DeleteForEveryone(chat, 250) // the newest slot held a message: it still counts
	for _, m := range []string{"a", "c"} {
		d.AddGroupMember("g", m, openimtest.RoleMember)
	}
	group := openimtest.GroupConversationID("g")
	gmsgs := sendBatches(d, group, func(i int) *openimtest.MsgData {
		return openimtest.Group("a", "g", openimtest.ContentText, openimtest.TextContent(fmt.Sprint("g", i+1)))
	}, 37, 93) // 130 messages, seq.max_seq 137
	d.SetReadSeq(chat, "b", 200)
	d.LoseSeqCache(chat)
	d.LoseSeqCache(group)

	s := d.open(openim.Options{})
	states, err := s.States(ctx, "b", []string{chat, group})
	if err != nil {
		t.Fatal(err)
	}
	if st := states[0]; st.MaxSeq != 250 || st.Unread() != 50 || st.LastTime != msgs[248].SendTime {
		t.Errorf("chat without MALLOC_SEQ: maxSeq %d unread %d time %d; want 250, 50 and the send time of 249 (%d)", st.MaxSeq, st.Unread(), st.LastTime, msgs[248].SendTime)
	}
	if st := states[1]; st.MaxSeq != 130 || st.LastTime != gmsgs[129].SendTime {
		t.Errorf("group without MALLOC_SEQ: maxSeq %d time %d, want 130 and %d", st.MaxSeq, st.LastTime, gmsgs[129].SendTime)
	}
	if n := d.cmds.Count("msg", "find"); n != 1 {
		t.Errorf("the fallback for two conversations cost %d msg queries, want 1", n)
	}

	// OpenIM's next read reseeds CURR from seq.max_seq; its next message gets 262.
	d.Malloc(chat, 0)
	d.Send(chat, openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("after the loss")))
	states, err = s.States(ctx, "a", []string{chat})
	if err != nil {
		t.Fatal(err)
	}
	if states[0].MaxSeq != 262 {
		t.Errorf("after OpenIM reseeded: maxSeq %d, want OpenIM's 262", states[0].MaxSeq)
	}
	chunks, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, 251), Seqs: seqRange(251, 262)}})
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(251); seq <= 261; seq++ {
		if v := im.ViewSlot(chat, seq, chunks[0].Slot(seq), "a"); v.Status != im.StatusMissing {
			t.Errorf("seq %d of OpenIM's hole reads %s, want MISSING", seq, v.Status)
		}
	}
	if v := im.ViewSlot(chat, 262, chunks[0].Slot(262), "a"); v.Status != im.StatusOK {
		t.Errorf("seq 262 reads %s", v.Status)
	}
}

// OpenIM v3.8.3 resets seq.min_seq to 0 whenever it reserves a new block, while its cached
// MALLOC_MIN_SEQ keeps the floor for up to an hour: msggate shows what OpenIM shows.
func TestStatesMinSeqIsOpenIMsCachedFloor(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	sendBatches(d, chat, func(i int) *openimtest.MsgData {
		return openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("x"))
	}, 40) // block 90
	d.SetMinSeq(chat, 21)
	d.CacheMinSeq(chat) // an OpenIM reader cached 21
	sendBatches(d, chat, func(i int) *openimtest.MsgData {
		return openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("y"))
	}, 60) // 100 > 90: refill, and seq.min_seq goes back to 0
	if _, min := seqDoc(t, d, chat); min != int64(0) {
		t.Fatalf("fixture: seq.min_seq %v after a refill, want 0 as OpenIM v3.8.3 writes", min)
	}
	s := d.open(openim.Options{})
	st, err := s.States(ctx, "b", []string{chat})
	if err != nil {
		t.Fatal(err)
	}
	if st[0].MinSeq != 21 || st[0].MaxSeq != 100 {
		t.Errorf("min %d max %d, want OpenIM's cached 21 and 100", st[0].MinSeq, st[0].MaxSeq)
	}
	d.TagAsDeleted("MALLOC_MIN_SEQ:" + chat)
	st, err = s.States(ctx, "b", []string{chat})
	if err != nil {
		t.Fatal(err)
	}
	if st[0].MinSeq != 0 {
		t.Errorf("with the cached floor tagged stale, min %d, want MongoDB's 0", st[0].MinSeq)
	}
}

func TestStatesRefuseBadIDs(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	s := d.open(openim.Options{})
	for _, tc := range []struct {
		user string
		conv []string
	}{
		{"", []string{"si_a_b"}},
		{"a:b", []string{"si_a_b"}},
		{"a", []string{"x_a_b"}},
		{"a", []string{"sg_"}},
		{"a", []string{""}},
	} {
		if _, err := s.States(ctx, tc.user, tc.conv); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("States(%q, %q): %v, want EINVALID", tc.user, tc.conv, err)
		}
	}
	// OpenIM's own IDs, underscores included, are accepted.
	if _, err := s.States(ctx, "user_with_underscore", []string{"si_a_b_c", "sn_x_y", "g_grp", "n_g1", "n_u_u", "si_u_u"}); err != nil {
		t.Errorf("OpenIM IDs refused: %v", err)
	}
}
