package chunkstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// The lease benchmarks measure what making several processes safe on one FerretDB costs: the
// same writes through a store that takes a lease per update (any FerretDB the gateway did not
// start itself) and through one that only serialises its own process's updates (the embedded
// default, and every store before leases existed), on the same FerretDB in the same run,
// alternating which goes first, with the ratio of their times:
//
//	go test -run '^$' -bench SharedFerretDB -benchtime 200x ./internal/chunkstore/
//
// AppendOne: one message into a chunk that exists (one conditional $set). Send: the updates
// one stored chat message costs the write path: the slot, the conversation's max seq and the
// sender's read seq.
func BenchmarkSharedFerretDBAppendOne(b *testing.B) { benchmarkLeases(b, false) }

// BenchmarkSharedFerretDBSend measures a send's three updates.
func BenchmarkSharedFerretDBSend(b *testing.B) { benchmarkLeases(b, true) }

func benchmarkLeases(b *testing.B, send bool) {
	ctx := context.Background()
	m := testenv.Mongo(b)
	stores := map[bool]*chunkstore.Store{true: connect(b, m, false), false: connect(b, m, true)}
	if !stores[true].SharedFerretDB() || stores[false].SharedFerretDB() {
		b.Fatal("the two stores do not take the two paths")
	}
	took := map[bool]time.Duration{}
	write := func(leased bool, seq int64) {
		// Each path has a conversation of its own; a chunk holds 99 appends after its first.
		conv := fmt.Sprintf("si_alice_%t%d", leased, (seq-1)/(im.ChunkSize-1))
		s := stores[leased]
		if seq%(im.ChunkSize-1) == 1 {
			if _, err := s.WriteMessages(ctx, conv, []*im.Message{msg(1, "first")}); err != nil {
				b.Fatal(err)
			}
		}
		slot := 2 + (seq-1)%(im.ChunkSize-1)
		start := time.Now()
		if _, err := s.WriteMessages(ctx, conv, []*im.Message{msg(slot, "b")}); err != nil {
			b.Fatal(err)
		}
		if send {
			if err := s.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{conv: {Seq: slot, Time: slot}}); err != nil {
				b.Fatal(err)
			}
			if err := s.RaiseReadSeqs(ctx, map[chunkstore.UserSeqKey]int64{{ConversationID: conv, UserID: "alice"}: slot}); err != nil {
				b.Fatal(err)
			}
		}
		took[leased] += time.Since(start)
	}
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		for _, leased := range []bool{i%2 == 0, i%2 != 0} {
			write(leased, int64(i))
		}
	}
	b.ReportMetric(float64(took[false].Nanoseconds())/float64(b.N), "process-lock-ns/op")
	b.ReportMetric(float64(took[true].Nanoseconds())/float64(b.N), "lease-ns/op")
	b.ReportMetric(float64(took[true])/float64(took[false]), "lease/process-lock")
}
