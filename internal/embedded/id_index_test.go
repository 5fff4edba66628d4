package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/embedded"
)

// plan is SQLite's query plan for a find by _id on coll, as FerretDB's explain reports it.
//
// A find by the same _id goes first. An SQLite connection notices a schema change (an index
// created by another connection) only when a statement it runs opens a read transaction, and
// then prepares that statement again; FerretDB's explain runs EXPLAIN QUERY PLAN, which opens
// none, so on a connection idle since the index was made it would still plan without it. The
// find refreshes the connection it ran on, the one FerretDB's pool (last in, first out) hands
// the explain, so the plan shown is the one the find itself ran with.
func plan(t *testing.T, db *mongo.Database, coll string, id any) string {
	t.Helper()
	if err := db.Collection(coll).FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Err(); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("find by _id on %s: %v", coll, err)
	}
	var ex struct {
		FilterPushdown bool `bson:"filterPushdown"`
		QueryPlanner   struct {
			Plan []string `bson:"Plan"`
		} `bson:"queryPlanner"`
	}
	cmd := bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}}}}
	if err := db.RunCommand(context.Background(), cmd).Decode(&ex); err != nil {
		t.Fatalf("explain on %s: %v", coll, err)
	}
	if !ex.FilterPushdown {
		t.Fatalf("FerretDB does not hand {_id: %v} on %s to SQLite", id, coll)
	}
	return strings.Join(ex.QueryPlanner.Plan, "; ")
}

func indexNames(t *testing.T, c *mongo.Collection) []string {
	t.Helper()
	specs, err := c.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// Ensure IndexIDs turns FerretDB's lookups by _id from a scan of the collection into an index
// search, and that FerretDB works on as before: it does not list the index, finds, updates and
// deletes by _id answer right, a dropped collection takes its index along, and a collection
// created later is indexed by the next call.
func TestIndexIDsMakesLookupsByIDSearches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := t.TempDir()
	uri, stop, err := embedded.StartFerretDB(ctx, dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database("app")

	// A database FerretDB does not have yet is nothing to index.
	if err := embedded.IndexIDs(ctx, dataDir, "app"); err != nil {
		t.Fatalf("IndexIDs before the database exists: %v", err)
	}

	chunks := db.Collection("msg")
	var docs []any
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("c%d:0", i)}, {Key: "n", Value: i}})
	}
	if _, err := chunks.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	oid := bson.NewObjectID()
	if _, err := db.Collection("legacy").InsertOne(ctx, bson.D{{Key: "_id", Value: oid}}); err != nil {
		t.Fatal(err)
	}
	before := indexNames(t, chunks)
	if p := plan(t, db, "msg", "c7:0"); !strings.Contains(p, "SCAN") {
		t.Fatalf("without the index FerretDB's plan is %q; expected a SCAN (has FerretDB learnt to index _id itself?)", p)
	}

	if err := embedded.IndexIDs(ctx, dataDir, "app"); err != nil {
		t.Fatal(err)
	}
	for coll, id := range map[string]any{"msg": "c7:0", "legacy": oid} {
		if p := plan(t, db, coll, id); !strings.Contains(p, "SEARCH") || strings.Contains(p, "SCAN") {
			t.Errorf("%s: plan of a find by _id %q, want an index SEARCH", coll, p)
		}
	}
	// Again: nothing to do, no error.
	if err := embedded.IndexIDs(ctx, dataDir); err != nil {
		t.Fatalf("IndexIDs of every database, again: %v", err)
	}

	// FerretDB's own view and answers are unchanged.
	if after := indexNames(t, chunks); !slices.Equal(after, before) {
		t.Errorf("FerretDB lists indexes %v, before IndexIDs %v", after, before)
	}
	var got bson.M
	if err := chunks.FindOne(ctx, bson.D{{Key: "_id", Value: "c7:0"}}).Decode(&got); err != nil || got["n"] != int32(7) {
		t.Fatalf("find by _id: %v, %v", got, err)
	}
	if res, err := chunks.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c8:0"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 80}}}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("update by _id: %+v, %v", res, err)
	}
	if err := chunks.FindOne(ctx, bson.D{{Key: "_id", Value: "c8:0"}}).Decode(&got); err != nil || got["n"] != int32(80) {
		t.Fatalf("after the update: %v, %v", got, err)
	}
	if res, err := chunks.DeleteOne(ctx, bson.D{{Key: "_id", Value: "c9:0"}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete by _id: %+v, %v", res, err)
	}
	if n, err := chunks.CountDocuments(ctx, bson.D{}); err != nil || n != 49 {
		t.Fatalf("%d documents after one delete, %v", n, err)
	}
	if _, err := chunks.InsertOne(ctx, bson.D{{Key: "_id", Value: "c7:0"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a second document with _id c7:0: %v, want a duplicate key error", err)
	}

	// Dropped and created again: a new table, unindexed until the next call.
	if err := chunks.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := chunks.InsertOne(ctx, bson.D{{Key: "_id", Value: "c1:0"}}); err != nil {
		t.Fatal(err)
	}
	if p := plan(t, db, "msg", "c1:0"); !strings.Contains(p, "SCAN") {
		t.Fatalf("a recreated collection's plan is %q; its old table's index should have gone with it", p)
	}
	if err := embedded.IndexIDs(ctx, dataDir, "app"); err != nil {
		t.Fatal(err)
	}
	if p := plan(t, db, "msg", "c1:0"); !strings.Contains(p, "SEARCH") {
		t.Fatalf("recreated collection after IndexIDs: plan %q", p)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatalf("drop the database: %v", err)
	}
}
