package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// backup reads every collection of db, as mongodump does.
func backup(t *testing.T, db *mongo.Database) map[string][]bson.Raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]bson.Raw{}
	for _, name := range names {
		cur, err := db.Collection(name).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		out[name] = docs
	}
	return out
}

// restore replaces the content of every collection of db with the backup's, as mongorestore
// --drop does (an upsert per document: a gateway still running may write meanwhile).
func restore(t *testing.T, db *mongo.Database, b map[string][]bson.Raw) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := db.Collection(name).DeleteMany(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, docs := range b {
		for _, d := range docs {
			_, err := db.Collection(name).ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.Lookup("_id")}}, d, options.Replace().SetUpsert(true))
			if err != nil {
				t.Fatalf("restore %s: %v", name, err)
			}
		}
	}
}

// storeTruth checks what alice and bob see of si_alice_bob against the store as the backup
// holds it: three messages, none read by bob, with the contents sent before the backup.
func storeTruth(t *testing.T, g *gatewaytest.Gateway, alice, bob string) {
	t.Helper()
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 3 || c.UnreadCount != 3 || c.ReadSeq != 0 ||
		c.LastMessage == nil || *c.LastMessage.Content != "before 3" {
		t.Errorf("bob after the restore: %+v, want maxSeq 3, 3 unread, last message \"before 3\"", c)
	}
	if c := g.Conversation(alice, "si_alice_bob"); c.MaxSeq != 3 {
		t.Errorf("alice after the restore: maxSeq %d, want 3", c.MaxSeq)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3, 4, 5}}, &out)
	if len(out.Messages) != 3 {
		t.Errorf("messages 1-5 after the restore: %+v, want the 3 the store holds", out.Messages)
	}
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	if st.SyncState.TotalUnread != 3 {
		t.Errorf("bob's total unread after the restore: %d, want 3", st.SyncState.TotalUnread)
	}
}

// sendAfterRestore checks that the next message gets the seq right after the store's max, and
// that what it stored is what is read.
func sendAfterRestore(t *testing.T, g *gatewaytest.Gateway, alice, bob string) {
	t.Helper()
	if m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "after"}); m.Seq != 4 {
		t.Errorf("first message after the restore got seq %d, want 4", m.Seq)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{3, 4}}, &out)
	if len(out.Messages) != 2 || contentOf(out.Messages[0]) != "before 3" || contentOf(out.Messages[1]) != "after" {
		t.Errorf("messages 3 and 4 after the restore: %+v", out.Messages)
	}
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 4 || c.UnreadCount != 4 {
		t.Errorf("bob after a send: %+v, want maxSeq 4, 4 unread", c)
	}
}

// writeAheadOfBackup sends messages 4-7 and has bob read them all, so that Redis describes a
// store later than the backup (allocator, seq and read state, chunks, event logs and keys),
// and returns bob's sync token from then.
func writeAheadOfBackup(t *testing.T, g *gatewaytest.Gateway, alice, bob string) string {
	t.Helper()
	for i := 4; i <= 7; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": fmt.Sprint("lost ", i)})
	}
	g.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob") { readSeq } }`, nil, &struct{}{})
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 7 || c.UnreadCount != 0 {
		t.Fatalf("bob before the restore: %+v", c)
	}
	var st syncStateResult
	g.Query(bob, syncStateQuery, nil, &st)
	return st.SyncState.Token
}

// Ensure a gateway started on a store restored from a backup, while Redis kept what a later
// state of the store made of it, serves the store's truth: max seqs, messages, read state and
// unread counts as the backup holds them; a new message gets the seq right after the store's
// max and overwrites nothing; a sync token of the later state answers tooLong.
func TestRestoredStoreServesItsTruth(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 1; i <= 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": fmt.Sprint("before ", i)})
	}
	mdb := testenv.Mongo(t) // the backup, restored into a database of its own
	live := mongoDatabase(t, g.Config.MongoURI, g.Config.MongoDatabase)
	saved := backup(t, live)
	// A check of the store's identity after the backup was taken, as a running gateway makes
	// every second: Redis is ahead of the backup's identity too.
	if err := g.StoreIdentity.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	oldToken := writeAheadOfBackup(t, g, alice, bob)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := g.Config
	cfg.MongoDatabase = mdb.Database()
	restore(t, mongoDatabase(t, cfg.MongoURI, cfg.MongoDatabase), saved)
	r := gatewaytest.New(t, cfg) // the same redis-server, which kept running
	storeTruth(t, r, alice, bob)
	if d := difference(r, bob, oldToken, 100); !d.SyncDifference.TooLong {
		t.Errorf("a sync token of the lost state: %+v, want tooLong", d.SyncDifference)
	}
	sendAfterRestore(t, r, alice, bob)
}

// Ensure a store restored from a backup under a running gateway (mongorestore while the
// gateway and Redis keep running) is served as the backup holds it within seconds, and the
// next message continues right after the store's max.
func TestStoreRestoredUnderARunningGateway(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit = -1 }) // it polls
	alice, bob := g.Token("alice"), g.Token("bob")
	for i := 1; i <= 3; i++ {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": fmt.Sprint("before ", i)})
	}
	live := mongoDatabase(t, g.Config.MongoURI, g.Config.MongoDatabase)
	saved := backup(t, live)
	if err := g.StoreIdentity.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAheadOfBackup(t, g, alice, bob)

	restore(t, live, saved)
	gatewaytest.WaitFor(t, 20*time.Second, "the running gateway still serves the state from before the restore", func() bool {
		c := g.Conversation(bob, "si_alice_bob")
		return c.MaxSeq == 3
	})
	storeTruth(t, g, alice, bob)
	sendAfterRestore(t, g, alice, bob)
}

// Ensure a gateway on a new database whose Redis holds another store's state (another
// database's, on a Redis Cluster) starts, serves its own store only, and that the discard
// deleted only msggate's keys that describe a store, on every master.
func TestNewStoreOnAnotherStoresRedis(t *testing.T) {
	cluster := testenv.RedisCluster(t)
	first := gatewaytest.StartOnCluster(t, cluster, testenv.Mongo(t))
	alice, bob := first.Token("alice"), first.Token("bob")
	first.Send("alice", "bob", "", 150) // past a chunk
	first.SendGQL(first.Token("carol"), map[string]any{"recvID": "alice", "contentType": 101, "content": "other store"})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// Keys of another application and another prefix on the same cluster stay.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer rdb.Close()
	ctx := context.Background()
	foreign := []string{"other-app:{si_alice_bob}:seqstate", "session:42", "msggate-test:{u:alice}:log"}
	for i, k := range foreign {
		if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	second := gatewaytest.StartOnCluster(t, cluster, testenv.Mongo(t))
	if c := second.Conversation(alice, "si_alice_bob"); c.MaxSeq != 0 || c.LastMessage != nil {
		t.Errorf("a conversation of the other store: %+v", c)
	}
	if m := second.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "first"}); m.Seq != 1 {
		t.Errorf("first message of the new store got seq %d, want 1", m.Seq)
	}
	if c := second.Conversation(bob, "si_alice_bob"); c.MaxSeq != 1 || c.UnreadCount != 1 {
		t.Errorf("bob on the new store: %+v", c)
	}
	var st syncStateResult
	second.Query(alice, syncStateQuery, nil, &st)
	if len(st.SyncState.Conversations) != 1 || st.SyncState.TotalUnread != 0 {
		t.Errorf("alice's conversations on the new store: %+v, want only si_alice_bob", st.SyncState)
	}
	for _, k := range foreign {
		if n := rdb.Exists(ctx, k).Val(); n != 1 {
			t.Errorf("%s, not msggate's, was deleted", k)
		}
	}
}

func contentOf(m gatewaytest.Message) string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// mongoDatabase connects to the database a gateway uses, for the test's own reads and writes.
func mongoDatabase(t *testing.T, uri, name string) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(name)
}
