package chunkstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// keyed are the collections whose documents msggate keys by natural _id.
var keyed = []string{
	chunkstore.CollectionChunks, chunkstore.CollectionSeqs, chunkstore.CollectionUserSeqs,
	chunkstore.CollectionClientMsgID, chunkstore.CollectionClientMsgKey, chunkstore.CollectionGroupMember,
	chunkstore.CollectionUserConversation,
}

// filters records the filter of every find, update, delete and findAndModify statement sent to
// the keyed collections.
type filters struct {
	mu   sync.Mutex
	seen []filterSeen
}

type filterSeen struct {
	command, coll string
	filter        bson.Raw
}

func (f *filters) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
		if !slices.Contains(keyed, coll) {
			return
		}
		var qs []bson.Raw
		switch e.CommandName {
		case "find":
			qs = append(qs, docOrEmpty(e.Command.Lookup("filter")))
		case "findAndModify":
			qs = append(qs, docOrEmpty(e.Command.Lookup("query")))
		case "update", "delete":
			list := "updates"
			if e.CommandName == "delete" {
				list = "deletes"
			}
			vals, _ := e.Command.Lookup(list).Array().Values()
			for _, v := range vals {
				qs = append(qs, docOrEmpty(v.Document().Lookup("q")))
			}
		case "insert":
			return
		default:
			qs = append(qs, nil) // count, aggregate, ...: never a lookup by _id
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, q := range qs {
			f.seen = append(f.seen, filterSeen{e.CommandName, coll, q})
		}
	}}
}

func docOrEmpty(v bson.RawValue) bson.Raw {
	d, ok := v.DocumentOK()
	if !ok {
		return bson.Raw{}
	}
	return d
}

func (f *filters) take() []filterSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.seen
	f.seen = nil
	return out
}

// bareID reports whether a filter is exactly {_id: <string>}: the one shape FerretDB 1.24's
// SQLite backend hands to SQLite rather than decoding every document of the collection.
func bareID(q bson.Raw) bool {
	elems, err := q.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	_, ok := elems[0].Value().StringValueOK()
	return ok
}

// Ensure every lookup of a message send and of a history read, and every slot mutation and
// retention delete, on a store with natural keys filters by a bare _id, and that FerretDB's own
// explain says it pushes such a filter down to SQLite and SQLite searches the _id index for it
// (the index embedded.IndexIDs adds; without it the plan is a SCAN of the collection). That is
// the one lookup FerretDB 1.24 has whose cost does not grow with the collection;
// BenchmarkColdHistoryRead measures it.
func TestEveryLookupIsByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := testenv.Mongo(t)
	var f filters
	db := m.Connect(t, f.monitor())
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if legacy := legacyCollections(t, db); len(legacy) != 0 {
		t.Fatalf("a new store reads %v by field", legacy)
	}
	m.IndexIDs(t) // as gateway.Open does for its embedded store
	f.take()

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A send: dedupe, claim, allocate, write (a new chunk, then appends, a retry and a
	// collision), record, announce.
	key := chunkstore.ClientMsgKey{ConversationID: conv, SendID: "alice", ClientMsgID: "c|1"}
	_, err = store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{key})
	must(err)
	_, err = store.ClaimClientMsgIDs(ctx, map[chunkstore.ClientMsgKey]int64{key: 1})
	must(err)
	_, err = store.ClaimClientMsgIDs(ctx, map[chunkstore.ClientMsgKey]int64{key: 2}) // a duplicate send
	must(err)
	must(store.MoveClientMsgSeq(ctx, key, 1))
	_, err = store.ReserveSeqBlock(ctx, conv, 100)
	must(err)
	_, err = store.WriteMessages(ctx, conv, msgs(1, 50, "a"))
	must(err)
	_, err = store.WriteMessages(ctx, conv, msgs(51, 150, "a"))
	must(err)
	_, err = store.WriteMessages(ctx, conv, msgs(150, 151, "b")) // 150 is taken
	must(err)
	_, err = store.RewriteMessages(ctx, conv, msgs(151, 151, "b"))
	must(err)
	must(store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv: {Seq: 151, Time: 1}}))
	must(store.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: conv, UserID: "alice"}: 151}))
	must(store.AddUserConversations(ctx, []chunkstore.UserConversation{{UserID: "alice", ConversationID: conv}, {UserID: "bob", ConversationID: conv}}))
	// A cold history page, messages by seq and an access check.
	_, err = store.FindConversationSeqs(ctx, []string{conv, "si_alice_carol"})
	must(err)
	_, err = store.FindUserSeqs(ctx, []chunkstore.UserSeqKey{{ConversationID: conv, UserID: "alice"}, {ConversationID: conv, UserID: "bob"}})
	must(err)
	_, err = store.FindChunks(ctx, []string{conv + ":0", conv + ":1", conv + ":7"})
	must(err)
	_, err = store.FindGroupMemberships(ctx, "alice", []string{"g1", "g2"})
	must(err)
	// Read state, revokes, deletes, clearing history.
	must(store.MarkRead(ctx, conv, []int64{1, 2, 120}))
	_, err = store.Revoke(ctx, conv, 3, im.Revoke{UserID: "alice", Time: 1})
	must(err)
	_, err = store.Revoke(ctx, conv, 3, im.Revoke{UserID: "alice", Time: 2}) // already revoked
	must(err)
	must(store.DeleteForUser(ctx, conv, []int64{4, 140}, "bob"))
	cs, err := store.FindChunks(ctx, []string{conv + ":0"})
	must(err)
	must(store.DeleteForEveryone(ctx, conv, []*im.Message{cs[0].Slot(5).Msg}))
	must(store.RaiseUserMinSeqs(ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: conv, UserID: "bob"}: 10}))
	must(store.RaiseMinSeq(ctx, conv, 101))
	must(store.RemoveUserConversation(ctx, conv, []string{"bob"}))
	// Retention.
	_, err = store.FindChunkRange(ctx, conv, 0, 2)
	must(err)
	_, err = store.DeleteChunks(ctx, []string{conv + ":0"})
	must(err)
	_, err = store.DeleteChunkIfEmptyAbove(ctx, conv, 120) // 151 is above: kept
	must(err)
	_, err = store.DeleteChunkIfEmptyAbove(ctx, conv, 200) // deleted
	must(err)

	seen := f.take()
	byColl := map[string]int{}
	for _, s := range seen {
		byColl[s.coll]++
		if !bareID(s.filter) {
			t.Errorf("%s on %s filters by %v, not by a bare _id", s.command, s.coll, s.filter)
			continue
		}
		// A find first: an SQLite connection sees an index made by another one only once it
		// runs a statement that reads, and EXPLAIN does not; the find freshens the connection
		// FerretDB's pool hands the explain next (embedded's id_index_test.go).
		if err := db.Collection(s.coll).FindOne(ctx, s.filter).Err(); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("find %v: %v", s.filter, err)
		}
		var ex struct {
			FilterPushdown bool `bson:"filterPushdown"`
			QueryPlanner   struct {
				Plan []string `bson:"Plan"`
			} `bson:"queryPlanner"`
		}
		err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: s.coll}, {Key: "filter", Value: s.filter}}}}).Decode(&ex)
		if err != nil {
			t.Fatalf("explain %v: %v", s.filter, err)
		}
		if !ex.FilterPushdown {
			t.Errorf("FerretDB does not push %v on %s down: %+v", s.filter, s.coll, ex)
		}
		if plan := strings.Join(ex.QueryPlanner.Plan, "; "); !strings.Contains(plan, "SEARCH") || strings.Contains(plan, "SCAN") {
			t.Errorf("SQLite's plan for %v on %s is %q, not an index SEARCH", s.filter, s.coll, plan)
		}
	}
	for _, c := range []string{chunkstore.CollectionChunks, chunkstore.CollectionSeqs, chunkstore.CollectionUserSeqs,
		chunkstore.CollectionClientMsgKey, chunkstore.CollectionGroupMember, chunkstore.CollectionUserConversation} {
		if byColl[c] == 0 {
			t.Errorf("no lookup on %s was checked", c)
		}
	}
	// A new store has no client message IDs of an earlier version: a send does not look there.
	if n := byColl[chunkstore.CollectionClientMsgID]; n != 0 {
		t.Errorf("a new store looked up %d client message IDs of an earlier version", n)
	}
	t.Logf("%d statements checked: %v", len(seen), byColl)
}

// rawDoc reads one document by a field, as an OpenIM-style reader that knows only the field
// names would.
// legacyCollections reads the layout Open records in db and returns, in keyed's order, the
// keyed collections without a natural-key record: those a Store reads by their fields.
func legacyCollections(t testing.TB, db *mongo.Database) []string {
	t.Helper()
	ctx := context.Background()
	cur, err := db.Collection(chunkstore.CollectionLayout).Find(ctx, bson.D{{Key: "natural_ids", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		t.Fatal(err)
	}
	natural := map[string]bool{}
	for _, r := range recs {
		natural[r.ID] = true
	}
	var out []string
	for _, c := range keyed {
		if !natural[c] {
			out = append(out, c)
		}
	}
	return out
}

func rawDoc(t *testing.T, db *mongo.Database, coll string, filter bson.D) bson.M {
	t.Helper()
	var d bson.M
	if err := db.Collection(coll).FindOne(context.Background(), filter).Decode(&d); err != nil {
		t.Fatalf("%s %v: %v", coll, filter, err)
	}
	return d
}

// Ensure a new store's documents carry their natural _id beside OpenIM's field names, so a
// reader that looks them up by doc_id, conversation_id or user_id still finds them.
func TestNaturalKeysKeepOpenIMFields(t *testing.T) {
	t.Parallel()
	e := open(t)
	ctx := e.ctx
	allStored(t, e.write(t, conv, msgs(1, 3, "a")))
	if err := e.store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv: {Seq: 3, Time: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: conv, UserID: "bob"}: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.ClaimClientMsgIDs(ctx, map[chunkstore.ClientMsgKey]int64{{ConversationID: conv, SendID: "alice", ClientMsgID: "x|y"}: 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.ApplyGroupMembers(ctx, "g1", nil, []chunkstore.GroupMember{{GroupID: "g1", UserID: "alice", Role: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddUserConversations(ctx, []chunkstore.UserConversation{{UserID: "alice", ConversationID: conv}}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		coll   string
		filter bson.D
		id     string
		fields bson.M
	}{
		{chunkstore.CollectionChunks, bson.D{{Key: "doc_id", Value: conv + ":0"}}, conv + ":0", bson.M{"doc_id": conv + ":0"}},
		{chunkstore.CollectionSeqs, bson.D{{Key: "conversation_id", Value: conv}}, conv, bson.M{"conversation_id": conv, "max_seq": int64(3)}},
		{chunkstore.CollectionUserSeqs, bson.D{{Key: "conversation_id", Value: conv}, {Key: "user_id", Value: "bob"}}, conv + "|bob",
			bson.M{"conversation_id": conv, "user_id": "bob", "read_seq": int64(2)}},
		{chunkstore.CollectionClientMsgKey, bson.D{{Key: "conversation_id", Value: conv}, {Key: "client_msg_id", Value: "x|y"}}, conv + "|alice|x|y",
			bson.M{"conversation_id": conv, "send_id": "alice", "client_msg_id": "x|y", "seq": int64(3)}},
		{chunkstore.CollectionGroupMember, bson.D{{Key: "group_id", Value: "g1"}, {Key: "user_id", Value: "alice"}}, "g1|alice",
			bson.M{"group_id": "g1", "user_id": "alice", "role": int32(1)}},
		{chunkstore.CollectionUserConversation, bson.D{{Key: "user_id", Value: "alice"}, {Key: "conversation_id", Value: conv}}, "alice|" + conv,
			bson.M{"user_id": "alice", "conversation_id": conv}},
	} {
		d := rawDoc(t, e.db, c.coll, c.filter)
		if d["_id"] != c.id {
			t.Errorf("%s: _id %v, want %q", c.coll, d["_id"], c.id)
		}
		for k, v := range c.fields {
			if d[k] != v {
				t.Errorf("%s: %s = %#v, want %#v", c.coll, k, d[k], v)
			}
		}
	}

	// Open again: the recorded layout stands although the collections are no longer empty.
	again, err := chunkstore.Open(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	if legacy := legacyCollections(t, e.db); len(legacy) != 0 {
		t.Fatalf("reopened store reads %v by field", legacy)
	}
	if cs, err := again.FindChunks(ctx, []string{conv + ":0"}); err != nil || cs[0] == nil || cs[0].Slot(3).Msg == nil {
		t.Fatalf("reopened store: %v, %v", cs, err)
	}
}

// Ensure a store written by an earlier version (ObjectID _ids, documents found by their
// fields) is recognised at open and keeps working: what it holds is read, updates land in its
// documents rather than beside them, and no key gets a second document.
func TestLegacyStoreIsReadByField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := testenv.Mongo(t)
	db := m.Connect(t, nil)
	// The documents as the earlier version wrote them: no _id of its own (the driver makes an
	// ObjectID), found and upserted by field.
	old := im.NewChunk(conv + ":0")
	for s := int64(1); s <= 3; s++ {
		old.Slots[s-1].Msg = msg(s, "old")
	}
	if _, err := db.Collection(chunkstore.CollectionChunks).InsertOne(ctx, old); err != nil {
		t.Fatal(err)
	}
	upsert := func(coll string, filter, update bson.D) {
		t.Helper()
		if _, err := db.Collection(coll).UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true)); err != nil {
			t.Fatal(err)
		}
	}
	upsert(chunkstore.CollectionSeqs, bson.D{{Key: "conversation_id", Value: conv}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "max_seq", Value: int64(3)}, {Key: "reserved_seq", Value: int64(100)}}}})
	upsert(chunkstore.CollectionUserSeqs, bson.D{{Key: "conversation_id", Value: conv}, {Key: "user_id", Value: "bob"}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "read_seq", Value: int64(2)}}}})
	if _, err := db.Collection(chunkstore.CollectionClientMsgID).InsertOne(ctx,
		bson.D{{Key: "conversation_id", Value: conv}, {Key: "client_msg_id", Value: "cm-3-old"}, {Key: "seq", Value: int64(3)}}); err != nil {
		t.Fatal(err)
	}

	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{chunkstore.CollectionChunks, chunkstore.CollectionSeqs, chunkstore.CollectionUserSeqs, chunkstore.CollectionClientMsgID}
	if got := legacyCollections(t, db); !slices.Equal(got, want) {
		t.Fatalf("legacy collections %v, want %v", got, want)
	}

	cs, err := store.FindChunks(ctx, []string{conv + ":0"})
	if err != nil || cs[0] == nil {
		t.Fatalf("FindChunks: %v, %v", cs, err)
	}
	sameMsg(t, "seq 3", cs[0].Slot(3), msg(3, "old"))
	seqs, err := store.FindConversationSeqs(ctx, []string{conv})
	if err != nil || seqs[conv].MaxSeq != 3 {
		t.Fatalf("FindConversationSeqs: %v, %v", seqs, err)
	}
	us, err := store.FindUserSeqs(ctx, []chunkstore.UserSeqKey{{ConversationID: conv, UserID: "bob"}})
	if err != nil || us[chunkstore.UserSeqKey{ConversationID: conv, UserID: "bob"}].ReadSeq != 2 {
		t.Fatalf("FindUserSeqs: %v, %v", us, err)
	}
	// The earlier version's client message ID is found for its sender, unowned: the document
	// does not say who that was.
	oldKey := chunkstore.ClientMsgKey{ConversationID: conv, SendID: "alice", ClientMsgID: "cm-3-old"}
	if got, err := store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{oldKey}); err != nil || got[oldKey] != (chunkstore.ClientMsgSeq{Seq: 3, Unowned: true}) {
		t.Fatalf("FindClientMsgSeqs: %v, %v", got, err)
	}

	// Writes go into the old documents: an append into the old chunk, a collision with an old
	// message, a new chunk, the seq documents.
	out, err := store.WriteMessages(ctx, conv, []*im.Message{msg(3, "new"), msg(4, "new"), msg(101, "new")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, []chunkstore.SlotOutcome{chunkstore.Taken, chunkstore.Stored, chunkstore.Stored}) {
		t.Fatalf("outcomes %v", out)
	}
	if err := store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv: {Seq: 101, Time: 5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReserveSeqBlock(ctx, conv, 100); err != nil {
		t.Fatal(err)
	}
	if err := store.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: conv, UserID: "bob"}: 4}); err != nil {
		t.Fatal(err)
	}
	// A claim goes beside the old document, as the key's own; the old document stays.
	if lost, err := store.ClaimClientMsgIDs(ctx, map[chunkstore.ClientMsgKey]int64{oldKey: 7}); err != nil || len(lost) != 0 {
		t.Fatalf("a claim of an old client message ID: %v, %v", lost, err)
	}
	if got, err := store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{oldKey}); err != nil || got[oldKey] != (chunkstore.ClientMsgSeq{Seq: 7}) {
		t.Fatalf("FindClientMsgSeqs after the claim: %v, %v", got, err)
	}
	if d := rawDoc(t, db, chunkstore.CollectionClientMsgID, bson.D{{Key: "client_msg_id", Value: "cm-3-old"}}); d["seq"] != int64(3) {
		t.Fatalf("the old client message ID document changed: %v", d)
	}
	if ok, err := store.Revoke(ctx, conv, 2, im.Revoke{UserID: "alice", Time: 1}); err != nil || !ok {
		t.Fatalf("Revoke: %v, %v", ok, err)
	}
	cs, err = store.FindChunks(ctx, []string{conv + ":0", conv + ":1"})
	if err != nil || cs[0] == nil || cs[1] == nil {
		t.Fatalf("FindChunks: %v, %v", cs, err)
	}
	sameMsg(t, "seq 3 after a collision", cs[0].Slot(3), msg(3, "old"))
	sameMsg(t, "seq 4", cs[0].Slot(4), msg(4, "new"))
	sameMsg(t, "seq 101", cs[1].Slot(101), msg(101, "new"))
	if cs[0].Slot(2).Revoke == nil {
		t.Fatal("seq 2 was not revoked")
	}
	seqs, err = store.FindConversationSeqs(ctx, []string{conv})
	if err != nil || seqs[conv].MaxSeq != 101 || seqs[conv].ReservedSeq < 201 {
		t.Fatalf("seq document after writes: %+v, %v", seqs[conv], err)
	}
	for _, c := range []struct {
		coll   string
		filter bson.D
	}{
		{chunkstore.CollectionChunks, bson.D{{Key: "doc_id", Value: conv + ":0"}}},
		{chunkstore.CollectionSeqs, bson.D{{Key: "conversation_id", Value: conv}}},
		{chunkstore.CollectionUserSeqs, bson.D{{Key: "conversation_id", Value: conv}, {Key: "user_id", Value: "bob"}}},
	} {
		n, err := db.Collection(c.coll).CountDocuments(ctx, c.filter)
		if err != nil || n != 1 {
			t.Errorf("%s %v: %d documents, %v; want 1", c.coll, c.filter, n, err)
		}
	}
	// A collection that was empty at open is keyed naturally from the start.
	if err := store.ApplyGroupMembers(ctx, "g1", nil, []chunkstore.GroupMember{{GroupID: "g1", UserID: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if d := rawDoc(t, db, chunkstore.CollectionGroupMember, bson.D{{Key: "group_id", Value: "g1"}}); d["_id"] != "g1|alice" {
		t.Fatalf("group member _id %v", d["_id"])
	}
	// Opening again still reads the old collections by field.
	again, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got := legacyCollections(t, db); !slices.Equal(got, want) {
		t.Fatalf("reopened: legacy collections %v, want %v", got, want)
	}
	if cs, err := again.FindChunks(ctx, []string{conv + ":0"}); err != nil || cs[0] == nil {
		t.Fatalf("reopened store: the earlier version's chunk %v, %v", cs, err)
	}
}

// Ensure an ID that holds the key separator is refused rather than stored under a key another
// pair of IDs could have.
func TestNaturalKeySeparatorRefused(t *testing.T) {
	t.Parallel()
	e := open(t)
	err := e.store.RaiseReadSeqs(e.ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: "si_a|b_c", UserID: "d"}: 1})
	if err == nil {
		t.Fatal("a conversation ID with '|' was stored")
	}
	if _, err := e.store.FindUserSeqs(e.ctx, []chunkstore.UserSeqKey{{ConversationID: "si_a|b_c", UserID: "d"}}); err == nil {
		t.Fatal("a conversation ID with '|' was looked up")
	}
}

// Ensure the client message IDs an earlier version kept without their sender still answer
// after the upgrade, in either layout that version wrote them in: every sender's key finds the
// old seq, marked unowned (whose it is, only the slot tells), a claim of a key's own is kept
// beside it and found first from then on, and the old document is only read.
func TestClientMsgIDsOfAnEarlierVersion(t *testing.T) {
	t.Parallel()
	for _, natural := range []bool{true, false} {
		t.Run(fmt.Sprintf("natural ids %v", natural), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testenv.Mongo(t).Connect(t, nil)
			const group = "sg_team"
			old := bson.D{{Key: "conversation_id", Value: group}, {Key: "client_msg_id", Value: "x|1"}, {Key: "seq", Value: int64(5)}}
			if natural {
				// The version before opened the collection empty and keyed it by natural _id.
				if _, err := chunkstore.Open(ctx, db); err != nil {
					t.Fatal(err)
				}
				old = append(bson.D{{Key: "_id", Value: group + "|x|1"}}, old...)
			}
			if _, err := db.Collection(chunkstore.CollectionClientMsgID).InsertOne(ctx, old); err != nil {
				t.Fatal(err)
			}
			store, err := chunkstore.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if byField := slices.Contains(legacyCollections(t, db), chunkstore.CollectionClientMsgID); byField == natural {
				t.Fatalf("%s read by field: %v, want %v", chunkstore.CollectionClientMsgID, byField, !natural)
			}
			bob := chunkstore.ClientMsgKey{ConversationID: group, SendID: "bob", ClientMsgID: "x|1"}
			carol := chunkstore.ClientMsgKey{ConversationID: group, SendID: "carol", ClientMsgID: "x|1"}
			unseen := chunkstore.ClientMsgKey{ConversationID: group, SendID: "bob", ClientMsgID: "x|2"}
			unowned := chunkstore.ClientMsgSeq{Seq: 5, Unowned: true}
			found, err := store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{bob, carol, unseen})
			if err != nil || len(found) != 2 || found[bob] != unowned || found[carol] != unowned {
				t.Fatalf("found %v, %v; want seq 5, unowned, for bob and carol, nothing for x|2", found, err)
			}
			if lost, err := store.ClaimClientMsgIDs(ctx, map[chunkstore.ClientMsgKey]int64{carol: 6}); err != nil || len(lost) != 0 {
				t.Fatalf("carol's claim = %v, %v; want her own", lost, err)
			}
			found, err = store.FindClientMsgSeqs(ctx, []chunkstore.ClientMsgKey{bob, carol})
			if err != nil || found[bob] != unowned || found[carol] != (chunkstore.ClientMsgSeq{Seq: 6}) {
				t.Fatalf("after carol's claim: %v, %v; want bob at 5 unowned, carol at 6 her own", found, err)
			}
			if seqs, err := store.FindClientMsgIDSeqs(ctx, group, "x|1"); err != nil || !slices.Equal(seqs, []int64{6, 5}) {
				t.Fatalf("claims of x|1 by any sender = %v, %v; want carol's 6, then the old 5", seqs, err)
			}
			n, err := db.Collection(chunkstore.CollectionClientMsgID).CountDocuments(ctx, bson.D{})
			if d := rawDoc(t, db, chunkstore.CollectionClientMsgID, bson.D{{Key: "conversation_id", Value: group}}); err != nil || n != 1 || d["seq"] != int64(5) {
				t.Fatalf("%s holds %d documents (%v), the old one %v; want it alone and unchanged", chunkstore.CollectionClientMsgID, n, err, d)
			}
		})
	}
}
