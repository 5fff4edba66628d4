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

// The write benchmarks compare storing messages in msggate's chunked layout with a
// one-document-per-message layout, on the same FerretDB in the same run, alternating which
// goes first and reporting the ratio of their times:
//
//	go test -run '^$' -bench Write ./internal/chunkstore/
//
// Batch: 100 consecutive messages of a conversation in one call (one insert of a chunk, one
// insertMany of 100 documents). Append: one message at a time into a conversation that already
// has messages (a conditional $set into its chunk, one insert).
func BenchmarkWriteBatchOf100(b *testing.B) { benchmarkWrite(b, 100) }

// BenchmarkWriteAppendOne appends single messages.
func BenchmarkWriteAppendOne(b *testing.B) { benchmarkWrite(b, 1) }

func benchmarkWrite(b *testing.B, batch int) {
	ctx := context.Background()
	db := testenv.Mongo(b).Connect(b, nil)
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	flat := db.Collection("msg_flat")
	if _, err := flat.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "conversation_id", Value: 1}, {Key: "seq", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		b.Fatal(err)
	}
	next := int64(1)
	message := func(conv string, seq int64) *im.Message {
		return &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: fmt.Sprint("c", seq), ServerMsgID: fmt.Sprint("s", seq),
			ContentType: 101, Content: fmt.Sprintf(`{"text":"message number %d, about as long as a chat line"}`, seq), Seq: seq, SendTime: seq}
	}
	write := func(chunked bool, conv string, first int64) {
		msgs := make([]*im.Message, batch)
		docs := make([]any, batch)
		for i := range msgs {
			msgs[i] = message(conv, first+int64(i))
			docs[i] = bson.D{{Key: "conversation_id", Value: conv}, {Key: "seq", Value: msgs[i].Seq}, {Key: "msg", Value: msgs[i]}}
		}
		if chunked {
			if _, err := store.WriteMessages(ctx, conv, msgs); err != nil {
				b.Fatal(err)
			}
		} else if _, err := flat.InsertMany(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
	// Appends go into a conversation that already has a chunk started, as most sends do.
	if batch == 1 {
		write(true, "si_alice_bob", next)
		write(false, "si_alice_bob", next)
		next++
	}
	var chunkedTime, flatTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A batch of 100 starts a fresh conversation each time so both layouts write new
		// documents; appends continue the same conversation, as a busy chat does.
		conv := "si_alice_bob"
		if batch > 1 {
			conv = fmt.Sprintf("si_alice_u%d", i)
		}
		for _, chunked := range []bool{i%2 == 0, i%2 != 0} {
			start := time.Now()
			write(chunked, conv, next)
			if chunked {
				chunkedTime += time.Since(start)
			} else {
				flatTime += time.Since(start)
			}
		}
		if batch == 1 {
			next++
		}
	}
	b.ReportMetric(float64(chunkedTime.Nanoseconds())/float64(b.N), "chunked-ns/write")
	b.ReportMetric(float64(flatTime.Nanoseconds())/float64(b.N), "flat-ns/write")
	b.ReportMetric(float64(flatTime)/float64(chunkedTime), "flat/chunked")
}
