package testenv_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	srv := testenv.Redis(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	srv.Stop()
	// A raw dial avoids go-redis logging its own retry failures.
	if conn, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		conn.Close()
		t.Fatal("stopped server still accepts connections")
	}
	srv.Start()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
}

func TestMongo(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	other := testenv.Mongo(t)
	if db.Database() == other.Database() {
		t.Fatalf("two Mongo calls share database %q", db.Database())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mdb := db.Connect(t, nil)

	coll := mdb.Collection("things")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got struct {
		N int `bson:"n"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "a"}}).Decode(&got); err != nil {
		t.Fatalf("find: %v", err)
	}
	if got.N != 1 {
		t.Fatalf("n = %d, want 1", got.N)
	}

	// The other database must not see this test's data.
	n, err := mdb.Client().Database(other.Database()).Collection("things").CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 0 {
		t.Fatalf("other database has %d docs, want 0", n)
	}
}

func TestMongoParallel(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run("sub", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := testenv.Mongo(t).Connect(t, nil).Collection("c").InsertOne(ctx, bson.D{{Key: "i", Value: i}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Ensure a FerretDB server of its own keeps its port and its data across a crash (SIGKILL)
// and a graceful stop, each followed by a restart.
func TestFerretDBServerRestarts(t *testing.T) {
	s, err := testenv.StartFerretDBServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	coll := client.Database("restarts").Collection("docs")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	uri := s.URI()
	for _, end := range []struct {
		name string
		do   func()
	}{{"kill", s.Kill}, {"stop", s.Stop}} {
		end.do()
		if err := client.Ping(ctx, nil); err == nil {
			t.Fatalf("after %s the server still answers", end.name)
		}
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		if s.URI() != uri {
			t.Fatalf("after %s the URI moved from %s to %s", end.name, uri, s.URI())
		}
		var doc struct{ V string }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc.V != "kept" {
			t.Fatalf("after %s and a restart: %+v, %v", end.name, doc, err)
		}
	}
}
