package openim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/openim"
)

// A database that is not OpenIM's is refused at start-up with an error that names what is
// missing, and Open leaves it exactly as it was: no collection, no index.
func TestOpenRefusesADatabaseThatIsNotOpenIMs(t *testing.T) {
	t.Parallel()
	rs := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()

	empty := testenv.Mongo(t)
	emptyDB := empty.Connect(t, nil)
	_, err := openim.Open(ctx, emptyDB, rdb, openim.Options{})
	if !errors.Is(err, openim.ErrNotOpenIM) {
		t.Fatalf("Open on an empty database: %v, want ErrNotOpenIM", err)
	}
	if !strings.Contains(err.Error(), "lacks OpenIM's collections msg and seq") {
		t.Errorf("error %q should name both missing collections", err)
	}
	if names, _ := emptyDB.ListCollectionNames(ctx, bson.D{}); len(names) != 0 {
		t.Errorf("Open created collections %v", names)
	}

	half := testenv.Mongo(t)
	halfDB := half.Connect(t, nil)
	if _, err := halfDB.Collection("msg").InsertOne(ctx, bson.D{{Key: "doc_id", Value: "x:0"}}); err != nil {
		t.Fatal(err)
	}
	_, err = openim.Open(ctx, halfDB, rdb, openim.Options{})
	if !errors.Is(err, openim.ErrNotOpenIM) || !strings.Contains(err.Error(), "lacks OpenIM's collection seq ") {
		t.Fatalf("Open on a database with msg only: %v, want ErrNotOpenIM naming seq alone", err)
	}
	names, _ := halfDB.ListCollectionNames(ctx, bson.D{})
	if len(names) != 1 {
		t.Errorf("Open changed the collections: %v", names)
	}
	cur, err := halfDB.Collection("msg").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var idx []bson.M
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx) != 1 { // _id only
		t.Errorf("Open created indexes: %v", idx)
	}
}

// On an OpenIM database Open succeeds and reads nothing but the collection names (and pings
// Redis).
func TestOpenAcceptsAnOpenIMDatabase(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	before := d.Snapshot()
	d.open(openim.Options{})
	mustNoDiff(t, before, d.Snapshot())
}
