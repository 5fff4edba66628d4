package chunkstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
)

// entriesOf reads users' lists from the entries of user_conversation directly: the truth the
// list documents mirror.
func entriesOf(t *testing.T, ctx context.Context, db *mongo.Database, users []string) map[string][]string {
	t.Helper()
	cur, err := db.Collection(chunkstore.CollectionUserConversation).Find(ctx, bson.D{{Key: "user_id", Value: bson.D{{Key: "$in", Value: users}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []chunkstore.UserConversation
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range docs {
		out[d.UserID] = append(out[d.UserID], d.ConversationID)
	}
	return out
}

func sameLists(t *testing.T, got, want map[string][]string) {
	t.Helper()
	for u, ids := range want {
		g := slices.Clone(got[u])
		w := slices.Clone(ids)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("%s's list: got %v, want %v", u, got[u], ids)
		}
	}
	for u, ids := range got {
		if _, ok := want[u]; !ok && len(ids) > 0 {
			t.Errorf("%s's list: got %v, want none", u, ids)
		}
	}
}

// Ensure a new store's lists are read from one document per user, by _id, and that the
// documents follow every change of the entries: additions (repeated ones too) and removals.
func TestUserListsFollowTheEntries(t *testing.T) {
	e := open(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.store.AddUserConversations(e.ctx, []chunkstore.UserConversation{
		{UserID: "alice", ConversationID: "sg_g1"}, {UserID: "alice", ConversationID: "si_alice_bob"},
		{UserID: "bob", ConversationID: "sg_g1"}, {UserID: "bob", ConversationID: "si_alice_bob"},
		{UserID: "carol", ConversationID: "sg_g1"},
	}))
	must(e.store.AddUserConversations(e.ctx, []chunkstore.UserConversation{ // an addition retried
		{UserID: "alice", ConversationID: "sg_g1"}, {UserID: "alice", ConversationID: "sg_g2"},
	}))
	must(e.store.RemoveUserConversation(e.ctx, "sg_g1", []string{"bob", "carol", "dave"}))
	users := []string{"alice", "bob", "carol", "dave"}
	e.cmds.Reset()
	got, truncated, err := e.store.FindUsersConversations(e.ctx, users, 100)
	must(err)
	if n := e.cmds.Count(chunkstore.CollectionUserConversation, "find"); n != 0 {
		t.Errorf("the lists were read with %d queries of the entries, want finds by _id of the list documents", n)
	}
	if n := e.cmds.Count(chunkstore.CollectionUserLists, "find"); n == 0 {
		t.Error("the lists were not read from the list documents")
	}
	want := entriesOf(t, e.ctx, e.db, users)
	if len(want["alice"]) != 3 || len(want["bob"]) != 1 || len(want["carol"]) != 0 {
		t.Fatalf("the entries are %v", want)
	}
	sameLists(t, got, want)
	if l, ok := got["carol"]; ok {
		t.Errorf("carol, whose every conversation was removed, reads a list %v; want none, as the entries answer", l)
	}
	if len(truncated) != 0 {
		t.Errorf("truncated %v, want none", truncated)
	}
	again, err := chunkstore.Open(e.ctx, e.db) // as another instance, or after a restart
	must(err)
	got, truncated, err = again.FindUsersConversations(e.ctx, []string{"alice"}, 2)
	must(err)
	if len(got["alice"]) != 2 || !truncated["alice"] {
		t.Errorf("alice's list cut at 2: got %v (truncated %v)", got["alice"], truncated)
	}
}

// Ensure a store whose entries an earlier version wrote (no list documents) keeps answering
// lists from its entries, changes included.
func TestUserListsOfAnEarlierStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	db := testenv.Mongo(t).Connect(t, nil)
	if _, err := db.Collection(chunkstore.CollectionUserConversation).InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "alice|sg_g1"}, {Key: "user_id", Value: "alice"}, {Key: "conversation_id", Value: "sg_g1"}},
		bson.D{{Key: "_id", Value: "bob|sg_g1"}, {Key: "user_id", Value: "bob"}, {Key: "conversation_id", Value: "sg_g1"}},
	}); err != nil {
		t.Fatal(err)
	}
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddUserConversations(ctx, []chunkstore.UserConversation{{UserID: "alice", ConversationID: "sg_g2"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.RemoveUserConversation(ctx, "sg_g1", []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	got, _, err := store.FindUsersConversations(ctx, []string{"alice", "bob"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameLists(t, got, map[string][]string{"alice": {"sg_g1", "sg_g2"}})
}
