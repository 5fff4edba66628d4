package gateway_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/testenv"
)

// A client picks its clientMsgID, and a group member sees the others' IDs. These play a member
// who sends with another member's ID, which must neither take the other's seq nor cost the
// other's retry its seq.

// msgIDGroup makes the group "team" of bob and carol, as an admin does, over HTTP.
func msgIDGroup(t *testing.T, g *gatewaytest.Gateway) {
	t.Helper()
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "bob", "role": "OWNER"}, {"userID": "carol"}}}, &struct{}{})
}

// sendWithID sends content into the group as token's user under clientMsgID.
func sendWithID(g *gatewaytest.Gateway, token, clientMsgID, content string) gatewaytest.Message {
	g.T.Helper()
	return g.SendGQL(token, map[string]any{"groupID": "team", "contentType": 101, "content": content, "clientMsgID": clientMsgID})
}

// groupHolds fails unless the group's seqs 1, 2, ... hold exactly the given messages (sender,
// content) as a member reads them and as the store has them, and nothing after them.
func groupHolds(t *testing.T, g *gatewaytest.Gateway, token string, want ...[2]string) {
	t.Helper()
	const conv = "sg_team"
	seqs := make([]int64, len(want))
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(token, gatewaytest.MessagesQuery, map[string]any{"c": conv, "s": seqs}, &out)
	for i, w := range want {
		if i >= len(out.Messages) {
			t.Fatalf("seq %d was not answered: %+v", i+1, out.Messages)
		}
		m := out.Messages[i]
		if m.SendID == nil || m.Content == nil || *m.SendID != w[0] || *m.Content != w[1] {
			t.Errorf("seq %d reads %+v, want %q by %s", i+1, m, w[1], w[0])
		}
	}
	if c := g.Conversation(token, conv); c.MaxSeq != int64(len(want)) {
		t.Errorf("the group's max seq is %d, want %d", c.MaxSeq, len(want))
	}
	after := int64(len(want) + 1)
	chunks, err := g.Store.FindChunks(context.Background(), []string{im.DocID(conv, after)})
	if err != nil {
		t.Fatal(err)
	}
	if s := chunks[0].Slot(after); s != nil && s.Msg != nil {
		t.Errorf("the store holds %q by %s at seq %d: a message was stored twice", s.Msg.Content, s.Msg.SendID, after)
	}
}

// Ensure a member who sends with another member's clientMsgID gets a seq of their own, not the
// other's message, and the other's retry still gets its original seq: the group holds two
// messages.
func TestAbuseClientMsgIDOfAnotherMember(t *testing.T) {
	g := gatewaytest.Start(t)
	msgIDGroup(t, g)
	bob, carol := g.Token("bob"), g.Token("carol")
	if m := sendWithID(g, bob, "X", "bob's"); m.Seq != 1 {
		t.Fatalf("bob's send went to seq %d, want 1", m.Seq)
	}
	if m := sendWithID(g, carol, "X", "carol's"); m.Seq != 2 {
		t.Fatalf("carol's send with bob's clientMsgID went to seq %d, want a new seq 2", m.Seq)
	}
	if m := sendWithID(g, bob, "X", "bob's"); m.Seq != 1 {
		t.Fatalf("bob's retry went to seq %d, want his seq 1", m.Seq)
	}
	groupHolds(t, g, bob, [2]string{"bob", "bob's"}, [2]string{"carol", "carol's"})
}

// Ensure the same after an upgrade, for a send that the earlier version recorded without its
// sender: another member's send with its clientMsgID does not take its seq, and its sender's
// retry still does.
func TestAbuseClientMsgIDOfAnotherMemberAfterAnUpgrade(t *testing.T) {
	m, rs := testenv.Mongo(t), testenv.Redis(t)
	cfg := gatewaytest.Config(rs.URL(), m)
	before := gatewaytest.New(t, cfg)
	msgIDGroup(t, before)
	if got := sendWithID(before, before.Token("bob"), "X", "bob's"); got.Seq != 1 {
		t.Fatalf("bob's send went to seq %d, want 1", got.Seq)
	}
	// The store as the earlier version left it: bob's claim keyed by conversation and
	// clientMsgID alone, under the natural _id that version gave it.
	ctx := context.Background()
	db := m.Connect(t, nil)
	if _, err := db.Collection(chunkstore.CollectionClientMsgKey).DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	old := bson.D{{Key: "conversation_id", Value: "sg_team"}, {Key: "client_msg_id", Value: "X"}, {Key: "seq", Value: int64(1)}}
	if _, err := db.Collection(chunkstore.CollectionClientMsgID).ReplaceOne(ctx, bson.D{{Key: "_id", Value: "sg_team|X"}}, old,
		options.Replace().SetUpsert(true)); err != nil {
		t.Fatal(err)
	}

	g := gatewaytest.New(t, cfg) // the upgraded gateway, on the same stores
	bob, carol := g.Token("bob"), g.Token("carol")
	if got := sendWithID(g, carol, "X", "carol's"); got.Seq != 2 {
		t.Fatalf("carol's send with bob's clientMsgID went to seq %d, want a new seq 2", got.Seq)
	}
	if got := sendWithID(g, bob, "X", "bob's"); got.Seq != 1 {
		t.Fatalf("bob's retry went to seq %d, want his seq 1", got.Seq)
	}
	if got := sendWithID(g, carol, "X", "carol's"); got.Seq != 2 {
		t.Fatalf("carol's retry went to seq %d, want her seq 2", got.Seq)
	}
	groupHolds(t, g, carol, [2]string{"bob", "bob's"}, [2]string{"carol", "carol's"})
}
