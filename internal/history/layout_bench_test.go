package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// The benchmarks compare reading one page of 100 consecutive messages from the chunked layout
// (msggate's: one document per 100 seqs) with a one-document-per-message layout, both on the
// same FerretDB and the same redis-server in the same run. Each iteration reads the page from
// both layouts, alternating which goes first, and reports the ratio of their times, so that
// a noisy machine slows both alike.
//
//	go test -run '^$' -bench PageOf100 ./internal/history/
const (
	benchConv     = "si_alice_bob"
	benchMessages = 1000
	pageSize      = 100
)

type layouts struct {
	first   int64 // the page is first..first+pageSize-1
	reader  *cache.ReadThrough
	rdb     *redis.Client
	flat    *mongo.Collection
	docIDs  []string
	flatKey []string
}

func setupLayouts(b *testing.B, first int64) *layouts {
	b.Helper()
	ctx := context.Background()
	mdb := testenv.Mongo(b)
	rs := testenv.Redis(b)
	db := mdb.Connect(b, nil)
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	l := &layouts{first: first, reader: cache.NewReadThrough(store, cache.New(rdb, cache.Options{}), nil), rdb: rdb, flat: db.Collection("msg_flat")}

	msgs := make([]*im.Message, benchMessages)
	flatDocs := make([]any, benchMessages)
	for i := range msgs {
		seq := int64(i + 1)
		msgs[i] = &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: fmt.Sprint("c", seq), ServerMsgID: fmt.Sprint("s", seq),
			ContentType: 101, Content: fmt.Sprintf(`{"text":"message number %d, about as long as a chat line"}`, seq), Seq: seq, SendTime: 1_700_000_000_000 + seq}
		flatDocs[i] = bson.D{{Key: "conversation_id", Value: benchConv}, {Key: "seq", Value: seq}, {Key: "msg", Value: msgs[i]}}
	}
	if _, err := store.WriteMessages(ctx, benchConv, msgs); err != nil {
		b.Fatal(err)
	}
	if _, err := l.flat.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "conversation_id", Value: 1}, {Key: "seq", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		b.Fatal(err)
	}
	if _, err := l.flat.InsertMany(ctx, flatDocs); err != nil {
		b.Fatal(err)
	}
	var seqs []int64
	for s := l.first; s < l.first+pageSize; s++ {
		seqs = append(seqs, s)
		l.flatKey = append(l.flatKey, "flat:{"+benchConv+"}:"+strconv.FormatInt(s, 10))
	}
	for _, g := range im.GroupSeqsByDocID(benchConv, seqs) {
		l.docIDs = append(l.docIDs, g.DocID)
	}
	return l
}

// readChunked reads the page through msggate's read path and checks it is complete.
func (l *layouts) readChunked(b *testing.B) {
	chunks, err := l.reader.FindChunks(context.Background(), l.docIDs)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, c := range chunks {
		for s := l.first; s < l.first+pageSize; s++ {
			if sl := c.Slot(s); c.DocID == im.DocID(benchConv, s) && sl != nil && sl.Msg != nil {
				n++
			}
		}
	}
	if n != pageSize {
		b.Fatalf("chunked page holds %d messages", n)
	}
}

// readFlat reads the page from the per-message layout the same way: the cache first (one
// pipelined round trip), MongoDB for the misses (one range query), then fills the cache.
func (l *layouts) readFlat(b *testing.B) {
	ctx := context.Background()
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(l.flatKey))
	for i, k := range l.flatKey {
		cmds[i] = pipe.Get(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	hits := 0
	for _, c := range cmds {
		if data, err := c.Bytes(); err == nil {
			var m im.Message
			if json.Unmarshal(data, &m) == nil {
				hits++
			}
		}
	}
	if hits == pageSize {
		return
	}
	cur, err := l.flat.Find(ctx, bson.D{{Key: "conversation_id", Value: benchConv},
		{Key: "seq", Value: bson.D{{Key: "$gte", Value: l.first}, {Key: "$lt", Value: l.first + pageSize}}}})
	if err != nil {
		b.Fatal(err)
	}
	var docs []struct {
		Seq int64      `bson:"seq"`
		Msg im.Message `bson:"msg"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		b.Fatal(err)
	}
	if len(docs) != pageSize {
		b.Fatalf("flat page holds %d messages", len(docs))
	}
	fill := l.rdb.Pipeline()
	for _, d := range docs {
		data, _ := json.Marshal(d.Msg)
		fill.Set(ctx, "flat:{"+benchConv+"}:"+strconv.FormatInt(d.Seq, 10), data, time.Hour)
	}
	if _, err := fill.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

func benchmarkPage(b *testing.B, cold bool) {
	// A page aligned with a chunk reads one chunk; any other page reads two, twice the
	// messages it needs. Both cases are measured.
	for _, page := range []struct {
		name  string
		first int64
	}{{"aligned", 401}, {"spanning", 451}} {
		b.Run(page.name, func(b *testing.B) { benchmarkLayouts(b, setupLayouts(b, page.first), cold) })
	}
}

func benchmarkLayouts(b *testing.B, l *layouts, cold bool) {
	var chunked, flat time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if cold {
			b.StopTimer()
			if err := l.rdb.FlushAll(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		} else if i == 0 {
			l.readChunked(b) // warm both caches
			l.readFlat(b)
		}
		order := []bool{i%2 == 0, i%2 != 0}
		for _, chunkedFirst := range order {
			start := time.Now()
			if chunkedFirst {
				l.readChunked(b)
				chunked += time.Since(start)
			} else {
				l.readFlat(b)
				flat += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(chunked.Nanoseconds())/float64(b.N), "chunked-ns/page")
	b.ReportMetric(float64(flat.Nanoseconds())/float64(b.N), "flat-ns/page")
	b.ReportMetric(float64(flat)/float64(chunked), "flat/chunked")
}

// BenchmarkPageOf100Cold reads the page with an empty cache: from MongoDB, then fills Redis.
func BenchmarkPageOf100Cold(b *testing.B) { benchmarkPage(b, true) }

// BenchmarkPageOf100Warm reads the page from Redis.
func BenchmarkPageOf100Warm(b *testing.B) { benchmarkPage(b, false) }
