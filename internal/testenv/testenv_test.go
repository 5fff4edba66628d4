package testenv_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/testenv"
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
