package openim_test

import (
	"testing"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// Every slot shape OpenIM leaves reads as OpenIM means it, and messages OpenIM has accepted but
// not yet written to MongoDB are served from its message cache unless OpenIM marked them
// stale; all of it in one MongoDB query and one Redis round trip.
func TestChunksReadEverySlotShapeOpenIMWrites(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	var sent []*openimtest.MsgData
	for i := 0; i < 5; i++ {
		sent = append(sent, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("hello "+string(rune('1'+i)))))
	}
	sent[0].Options = map[string]bool{"history": true, "persistent": true}
	sent[0].AtUserIDList = []string{"b"}
	sent[0].OfflinePush = &openimtest.OfflinePush{Title: "t", Desc: "d"}
	d.Send(chat, sent...)                                                     // seqs 1..5
	d.Revoke(chat, 2, openimtest.Revoke{Role: 0, UserID: "a", Nickname: "A"}) // revoked
	d.DeleteForMe(chat, "b", 3)                                               // deleted by b for b
	d.DeleteForEveryone(chat, 4)                                              // slot becomes {msg: null}
	inFlight := []*openimtest.MsgData{
		openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("on the way")),
		openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("me too")),
	}
	d.SendInFlight(chat, inFlight...) // seqs 6, 7: Redis only
	d.SendInFlight(chat, openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("revoked in flight")))
	d.Revoke(chat, 8, openimtest.Revoke{UserID: "b"}) // MongoDB: revoke without msg; cache tagged
	d.SendInFlight(chat, openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("being refilled")))
	d.LockForFill(openimtest.MsgCacheKey(chat, 9)) // a reader is refilling seq 9 from MongoDB
	d.CacheMiss(openimtest.MsgCacheKey(chat, 12))  // a reader found nothing at 12

	// A group whose first messages are all still in flight: no chunk in MongoDB yet.
	d.AddGroupMember("g1", "a", openimtest.RoleOwner)
	g1 := openimtest.GroupConversationID("g1")
	d.SendInFlight(g1, openimtest.Group("a", "g1", openimtest.ContentText, openimtest.TextContent("first")))
	// A group whose chunk retention deleted: the cached copies are tagged, not gone yet.
	d.AddGroupMember("g2", "a", openimtest.RoleOwner)
	g2 := openimtest.GroupConversationID("g2")
	d.Send(g2, openimtest.Group("a", "g2", openimtest.ContentText, openimtest.TextContent("old")))
	d.DeleteChunk(g2, 0)

	s := d.open(openim.Options{})
	chunks, err := s.Chunks(ctx, []im.SeqGroup{
		{DocID: im.DocID(chat, 1), Seqs: seqRange(1, 12)},
		{DocID: im.DocID(g1, 1)},
		{DocID: im.DocID(g2, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	finds := d.cmds.Count("msg", "find", "aggregate")
	trips := d.trips.Take()
	if finds != 1 || len(trips) != 1 {
		t.Errorf("Chunks cost %d msg queries and %d Redis round trips, want 1 and 1", finds, len(trips))
	}
	for _, c := range trips[0] {
		if c == "hmget "+openimtest.MsgCacheKey(chat, 1) || c == "hmget "+openimtest.MsgCacheKey(chat, 5) {
			t.Errorf("looked up %q although MongoDB holds that message", c)
		}
	}

	view := func(seq int64, viewer string) im.MessageView {
		return im.ViewSlot(chat, seq, chunks[0].Slot(seq), viewer)
	}
	for _, tc := range []struct {
		seq    int64
		viewer string
		want   im.MessageStatus
	}{
		{1, "b", im.StatusOK}, {2, "b", im.StatusRevoked}, {3, "b", im.StatusDeleted}, {3, "a", im.StatusOK},
		{4, "a", im.StatusDeleted}, {4, "b", im.StatusDeleted}, {5, "b", im.StatusOK},
		{6, "a", im.StatusOK}, {7, "a", im.StatusOK},
		{8, "a", im.StatusMissing}, {9, "a", im.StatusMissing},
		{10, "a", im.StatusMissing}, {11, "a", im.StatusMissing}, {12, "a", im.StatusMissing},
	} {
		if got := view(tc.seq, tc.viewer).Status; got != tc.want {
			t.Errorf("seq %d for %s: %s, want %s", tc.seq, tc.viewer, got, tc.want)
		}
	}

	m := view(1, "b").Message
	want := sent[0]
	if m.SendID != "a" || m.RecvID != "b" || m.ClientMsgID != want.ClientMsgID || m.ServerMsgID != want.ServerMsgID ||
		m.Content != want.Content || m.ContentType != openimtest.ContentText || m.SessionType != openimtest.SingleChatType ||
		m.SenderPlatformID != 1 || m.MsgFrom != 100 || m.SendTime != want.SendTime || m.Seq != 1 ||
		m.Status != openimtest.StatusSendSuccess || !m.Options["persistent"] || len(m.AtUserIDList) != 1 ||
		m.OfflinePush == nil || m.OfflinePush.Title != "t" {
		t.Errorf("seq 1 read as %+v, sent %+v", m, want)
	}
	if r := view(2, "b").Revoke; r == nil || r.UserID != "a" || r.Nickname != "A" || r.Time == 0 {
		t.Errorf("seq 2 revoke: %+v", r)
	}
	if v := view(2, "b"); v.Message.Content != "" {
		t.Errorf("a revoked message shows its content %q", v.Message.Content)
	}
	if v := view(4, "a"); v.Message == nil || v.Message.Seq != 4 || v.Message.Content != "" || v.Message.Status != im.DeletedMessageStatus {
		t.Errorf("seq 4 (deleted for everyone) reads as %+v", v.Message)
	}
	if m := view(6, "a").Message; m.Content != inFlight[0].Content || m.ClientMsgID != inFlight[0].ClientMsgID || m.SendID != "b" || m.Seq != 6 {
		t.Errorf("in-flight seq 6 reads as %+v", m)
	}

	if chunks[1] == nil {
		t.Fatal("a chunk whose messages are all in flight reads as absent")
	}
	if v := im.ViewSlot(g1, 1, chunks[1].Slot(1), "a"); v.Status != im.StatusOK || v.Message.GroupID != "g1" {
		t.Errorf("in-flight group message: %+v", v)
	}
	if v := im.ViewSlot(g1, 2, chunks[1].Slot(2), "a"); v.Status != im.StatusMissing {
		t.Errorf("seq 2 of g1 was never sent, reads %s", v.Status)
	}
	if chunks[2] != nil {
		t.Errorf("a chunk retention deleted is served from OpenIM's stale cache: %+v", chunks[2].Slot(1))
	}
	if n := testenv.Matching(trips, "MSG_CACHE:"+g2+":1"); n != 1 {
		t.Errorf("the deleted chunk's seq 1 was looked up in %d round trips, want 1 (its tagged value must be seen and refused)", n)
	}
}

// Once the toMongo consumer has written an in-flight message, MongoDB's copy is what is read.
func TestChunksPreferMongoDBOnceTheMessageIsThere(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("one")))
	m := openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("two"))
	d.SendInFlight(chat, m)
	s := d.open(openim.Options{})

	read := func() *im.Message {
		t.Helper()
		c, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, 2), Seqs: []int64{2}}})
		if err != nil {
			t.Fatal(err)
		}
		return c[0].Slot(2).Msg
	}
	if got := read(); got == nil || got.Status != openimtest.StatusSending {
		t.Fatalf("in flight: %+v, want the cached copy (status 1, sending)", got)
	}
	d.ToMongo(chat, m)
	if got := read(); got == nil || got.Status != openimtest.StatusSendSuccess || got.Content != m.Content {
		t.Fatalf("after toMongo: %+v, want MongoDB's copy (status 2)", got)
	}
	d.trips.Take()
	read()
	if trips := d.trips.Take(); len(trips) != 0 {
		t.Errorf("reading a seq MongoDB holds still went to Redis: %v", trips)
	}
}

// Bad input is refused with EINVALID, before any store is read.
func TestChunksRefuseMalformedInput(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	s := d.open(openim.Options{})
	for _, g := range []im.SeqGroup{
		{DocID: "si_a_b"},
		{DocID: "si_a_b:x"},
		{DocID: "xx_a:0"},
		{DocID: "si_a_b:0", Seqs: []int64{101}},
		{DocID: "si_a_b:0", Seqs: []int64{0}},
	} {
		if _, err := s.Chunks(ctx, []im.SeqGroup{g}); im.ErrorCode(err) != im.EINVALID {
			t.Errorf("Chunks(%+v): %v, want EINVALID", g, err)
		}
	}
	if n := d.cmds.Count("msg", "find"); n != 0 {
		t.Errorf("bad input reached MongoDB %d times", n)
	}
}
