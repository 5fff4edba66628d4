package chunkstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// BenchmarkColdHistoryRead measures what a cold history(limit:100) asks of the store (the
// conversation's seq document and the viewer's read state, then the two chunks the page
// spans) with 100 and with 10,000 chunk documents of other conversations in the collection
// (each with its seq and seq_user documents), on a store of an earlier version, read by field,
// and on a new one, read by _id, against the same FerretDB in one run. Each layout has a small
// and a large database, and reads alternate between them, so the machine's load moves both
// alike. It reports each layout's read time at both sizes and their ratio (10,000 over 100;
// 1 means no slower as the store fills); in-id is a single $in on _id over the new layout,
// the form FerretDB also scans for. Every database gets the index on _id that msggate's
// embedded store has (embedded.IndexIDs). The fill and the scans by field are the slow part (a
// read by field of the large store takes tens of seconds), so one pass is enough, and
// ColdHistoryRead/id alone takes a minute or two:
//
//	go test -run '^$' -bench ColdHistoryRead -benchtime 1x -timeout 60m ./internal/chunkstore/
func BenchmarkColdHistoryRead(b *testing.B) {
	ctx := context.Background()
	for _, natural := range []bool{true, false} {
		name := "field"
		if natural {
			name = "id"
		}
		b.Run(name, func(b *testing.B) { benchmarkColdRead(ctx, b, name, natural) })
	}
}

// benchmarkColdRead is BenchmarkColdHistoryRead for one layout: natural keys (name "id")
// or an earlier version's (name "field").
func benchmarkColdRead(ctx context.Context, b *testing.B, name string, natural bool) {
	var small, large func(read string) time.Duration
	for i, others := range []int{100, 10_000} {
		read := coldReadFixture(ctx, b, natural, others)
		read("page") // the client's connections open; the documents stay as cold to msggate
		if i == 0 {
			small = read
		} else {
			large = read
		}
	}
	// Reads by field of the large store take long: fewer rounds there.
	rounds := 5 * b.N
	if !natural {
		rounds = 2 * b.N
	}
	report := func(metric, read string, rounds int) {
		var s, l time.Duration
		for range rounds {
			s += small(read)
			l += large(read)
		}
		b.ReportMetric(float64(s.Microseconds())/1000/float64(rounds), metric+"-100-ms")
		b.ReportMetric(float64(l.Microseconds())/1000/float64(rounds), metric+"-10k-ms")
		b.ReportMetric(float64(l)/float64(s), metric+"-10k/100")
	}
	report(name, "page", rounds)
	if natural {
		report("in-id", "in-id", 1)
	}
}

// coldReadFixture makes a database of the given layout holding a conversation of 150
// messages and others other conversations, and returns a function that times one read of it:
// "page" the reads a cold history page makes, "in-id" its chunks by one $in on _id.
func coldReadFixture(ctx context.Context, b *testing.B, natural bool, others int) func(read string) time.Duration {
	// A scan of the large store by field outlasts testenv's one-minute client timeout.
	m := testenv.Mongo(b)
	db := connectSlow(b, m)
	var store *chunkstore.Store
	open := func() {
		var err error
		if store, err = chunkstore.Open(ctx, db); err != nil {
			b.Fatal(err)
		}
	}
	// SQLite reads a collection in insertion order and a find by _id stops at its row, so the
	// conversation read goes in the middle: half the others before it, half after.
	fill := func(from, to int) {
		for filled := from; filled < to; filled += 500 {
			if err := insertOthers(ctx, db, filled, min(to-filled, 500), natural); err != nil {
				b.Fatal(err)
			}
		}
	}
	if natural {
		open() // an empty store: natural keys from the start
		fill(0, others/2)
	} else {
		fill(0, others/2) // an earlier version's documents: read by field from then on
		open()
	}
	if got := len(legacyCollections(b, db)) == 0; got != natural {
		b.Fatalf("natural keys %v, want %v", got, natural)
	}
	m.IndexIDs(b) // as gateway.Open does for its embedded store; what is inserted next is indexed as it goes
	const page = "si_reader_writer"
	if _, err := store.WriteMessages(ctx, page, msgs(1, 150, "p")); err != nil {
		b.Fatal(err)
	}
	if err := store.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{page: {Seq: 150, Time: 1}}); err != nil {
		b.Fatal(err)
	}
	viewer := chunkstore.UserSeqKey{ConversationID: page, UserID: "reader"}
	if err := store.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{viewer: 120}); err != nil {
		b.Fatal(err)
	}
	fill(others/2, others)
	docIDs := []string{page + ":0", page + ":1"}
	return func(read string) time.Duration {
		start := time.Now()
		switch read {
		case "page":
			seqs, err := store.FindConversationSeqs(ctx, []string{page})
			if err != nil || seqs[page].MaxSeq != 150 {
				b.Fatalf("seqs %v, %v", seqs, err)
			}
			if _, err := store.FindUserSeqs(ctx, []chunkstore.UserSeqKey{viewer}); err != nil {
				b.Fatal(err)
			}
			cs, err := store.FindChunks(ctx, docIDs)
			if err != nil || cs[0] == nil || cs[1] == nil {
				b.Fatalf("chunks %v, %v", cs, err)
			}
		case "in-id":
			cur, err := db.Collection(chunkstore.CollectionChunks).Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: docIDs}}}})
			if err != nil {
				b.Fatal(err)
			}
			var cs []im.Chunk
			if err := cur.All(ctx, &cs); err != nil || len(cs) != 2 {
				b.Fatalf("$in on _id: %d chunks, %v", len(cs), err)
			}
		}
		return time.Since(start)
	}
}

// insertOthers inserts n chunk documents of other conversations, numbered from first, each
// with one message and its seq and seq_user documents, shaped as a store of the given layout
// holds them (natural keys, or an earlier version's ObjectIDs).
func insertOthers(ctx context.Context, db *mongo.Database, first, n int, natural bool) error {
	var chunks, seqs, userSeqs []any
	for i := first; i < first+n; i++ {
		conv := fmt.Sprintf("si_other%d_peer", i)
		c := im.NewChunk(conv + ":0")
		c.Slots[0].Msg = msg(1, conv)
		chunk := bson.D{{Key: "doc_id", Value: c.DocID}, {Key: "msgs", Value: c.Slots}}
		seq := bson.D{{Key: "conversation_id", Value: conv}, {Key: "max_seq", Value: int64(1)}, {Key: "reserved_seq", Value: int64(100)}}
		userSeq := bson.D{{Key: "conversation_id", Value: conv}, {Key: "user_id", Value: "peer"}, {Key: "read_seq", Value: int64(1)}}
		if natural {
			chunk = append(bson.D{{Key: "_id", Value: c.DocID}}, chunk...)
			seq = append(bson.D{{Key: "_id", Value: conv}}, seq...)
			userSeq = append(bson.D{{Key: "_id", Value: conv + "|peer"}}, userSeq...)
		}
		chunks, seqs, userSeqs = append(chunks, chunk), append(seqs, seq), append(userSeqs, userSeq)
	}
	for coll, docs := range map[string][]any{chunkstore.CollectionChunks: chunks, chunkstore.CollectionSeqs: seqs, chunkstore.CollectionUserSeqs: userSeqs} {
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("fill %s: %w", coll, err)
		}
	}
	return nil
}

// connectSlow connects to the test's database with a client that waits up to 30 minutes for
// an answer.
func connectSlow(b *testing.B, m *testenv.MongoDB) *mongo.Database {
	client, err := mongo.Connect(options.Client().ApplyURI(m.URI()).SetTimeout(30 * time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(m.Database())
}
