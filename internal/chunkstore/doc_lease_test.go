package chunkstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// connect opens a Store on the test database through a client of its own, as a separate
// gateway process would.
func connect(t testing.TB, m *testenv.MongoDB, sole bool) *chunkstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := chunkstore.Connect(ctx, chunkstore.Options{URI: m.URI(), Database: m.Database(), SoleWriter: sole})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// leaseDocs lists what the lease collection holds, by _id.
func leaseDocs(t *testing.T, e *env) []string {
	t.Helper()
	cur, err := e.db.Collection(chunkstore.CollectionLeases).Find(e.ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(e.ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// Ensure FerretDB is detected: a store that may share it takes leases, the embedded
// default's (SoleWriter) does not.
func TestSharedFerretDBDetected(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	if !connect(t, m, false).SharedFerretDB() {
		t.Error("a store on FerretDB does not take leases")
	}
	if connect(t, m, true).SharedFerretDB() {
		t.Error("a sole writer takes leases")
	}
}

// Ensure two stores on separate clients, as two gateway processes on one FerretDB, writing
// different slots of one chunk at the same time lose no acknowledged message, hand out
// distinct seq blocks and never lower a max seq; and leave no lease behind.
func TestSharedFerretDBTwoWriters(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	stores := [2]*chunkstore.Store{connect(t, m, false), connect(t, m, false)}
	e := &env{ctx: context.Background(), store: stores[0], db: m.Connect(t, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The chunk exists first, so that every write below is an update: inserts are atomic on
	// FerretDB anyway.
	allStored(t, e.write(t, conv, []*im.Message{msg(1, "x")}))
	const perStore = 3
	written := msgs(1, im.ChunkSize, "x")
	outcomes := make([]chunkstore.SlotOutcome, im.ChunkSize+1)
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for si, s := range stores {
		for w := 0; w < perStore; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Writer w of store si takes every sixth seq from 2: the two stores always
				// write neighbouring slots of the same chunk.
				for seq := int64(2 + si + 2*w); seq <= im.ChunkSize; seq += 2 * perStore {
					out, err := s.WriteMessages(ctx, conv, []*im.Message{written[seq-1]})
					if err != nil {
						errs <- fmt.Errorf("store %d writer %d seq %d: %w", si, w, seq, err)
						return
					}
					outcomes[seq] = out[0]
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := e.chunk(t, conv+":0")
	lost := 0
	for seq := int64(2); seq <= im.ChunkSize; seq++ {
		if outcomes[seq] != chunkstore.Stored {
			t.Errorf("seq %d: outcome %d, want Stored", seq, outcomes[seq])
		}
		if s := c.Slot(seq); s == nil || s.Msg == nil {
			lost++
			continue
		}
		sameMsg(t, fmt.Sprintf("seq %d", seq), c.Slot(seq), written[seq-1])
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages lost", lost, im.ChunkSize-1)
	}

	t.Run("seq documents", func(t *testing.T) {
		const c = "sg_two_writers"
		var wg sync.WaitGroup
		ends := make([]int64, 8)
		errs := make([]error, 8)
		for w := range ends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[w%2]
				doc, err := s.ReserveSeqBlock(ctx, c, 100)
				ends[w], errs[w] = doc.ReservedSeq, err
				if err == nil {
					errs[w] = s.RaiseMaxSeqs(ctx, map[string]chunkstore.StoredMax{c: {Seq: int64(10 + w)}})
				}
			}()
		}
		wg.Wait()
		seen := map[int64]bool{}
		for w, end := range ends {
			if errs[w] != nil {
				t.Fatalf("writer %d: %v", w, errs[w])
			}
			if end%100 != 0 || end < 100 || end > 800 || seen[end] {
				t.Fatalf("block ends %v: want each of 100..800 once", ends)
			}
			seen[end] = true
		}
		got, err := stores[0].FindConversationSeqs(ctx, []string{c})
		if err != nil || got[c].MaxSeq != 17 {
			t.Fatalf("max seq = %d (%v), want 17", got[c].MaxSeq, err)
		}
	})

	if ids := leaseDocs(t, e); len(ids) != 0 {
		t.Errorf("leases left behind: %v", ids)
	}
}

// Ensure a lease held by another live writer is waited for, up to the caller's deadline,
// and a lease whose holder died is taken over once it has expired.
func TestSharedFerretDBLeases(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	e := &env{ctx: context.Background(), store: connect(t, m, false), db: m.Connect(t, nil)}
	allStored(t, e.write(t, conv, []*im.Message{msg(1, "a")}))
	leaseID := chunkstore.CollectionChunks + "|" + conv + ":0"
	leases := e.db.Collection(chunkstore.CollectionLeases)
	hold := func(owner string, expires time.Time) {
		t.Helper()
		if _, err := leases.InsertOne(e.ctx, bson.D{{Key: "_id", Value: leaseID}, {Key: "owner", Value: owner},
			{Key: "expires", Value: expires.UnixMilli()}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("live lease is waited for", func(t *testing.T) {
		hold("alive-1", time.Now().Add(time.Minute))
		short, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
		_, err := e.store.WriteMessages(short, conv, []*im.Message{msg(2, "a")})
		cancel()
		if im.ErrorCode(err) != im.EUNAVAILABLE {
			t.Fatalf("write under another's lease: %v, want EUNAVAILABLE", err)
		}
		done := make(chan error, 1)
		go func() {
			out, err := e.store.WriteMessages(e.ctx, conv, []*im.Message{msg(2, "a")})
			if err == nil && out[0] != chunkstore.Stored {
				err = fmt.Errorf("outcome %d, want Stored", out[0])
			}
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("the write did not wait for the lease: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := leases.DeleteOne(e.ctx, bson.D{{Key: "_id", Value: leaseID}}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the write did not go ahead once the lease was released")
		}
		sameMsg(t, "seq 2", e.chunk(t, conv+":0").Slot(2), msg(2, "a"))
	})

	t.Run("dead writer's lease is taken over", func(t *testing.T) {
		hold("dead-1", time.Now().Add(-time.Second))
		allStored(t, e.write(t, conv, []*im.Message{msg(3, "a")}))
		sameMsg(t, "seq 3", e.chunk(t, conv+":0").Slot(3), msg(3, "a"))
		ids := leaseDocs(t, e)
		if want := "takeover|" + leaseID + "|dead-1"; len(ids) != 1 || ids[0] != want {
			t.Fatalf("lease documents %v, want only the marker %s", ids, want)
		}
	})
}

// Ensure a take-over that its writer gives up half-way (the client's request timed out)
// still removes the dead writer's lease: after its marker is in, no other waiter may, and
// every later update of the document would wait forever.
func TestLeaseTakeOverOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	ctx := context.Background()
	writeCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	var once sync.Once
	var armed atomic.Bool
	store, err := chunkstore.Connect(ctx, chunkstore.Options{URI: m.URI(), Database: m.Database(),
		OnCommand: func(_ context.Context, cmd, coll string) {
			// The caller gives up once the take-over's marker is in, as the stale lease is
			// being deleted.
			if armed.Load() && cmd == "delete" && coll == chunkstore.CollectionLeases {
				once.Do(giveUp)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	e := &env{ctx: ctx, store: store, db: m.Connect(t, nil)}
	leaseID := chunkstore.CollectionChunks + "|" + conv + ":0"
	if _, err := e.db.Collection(chunkstore.CollectionLeases).InsertOne(ctx, bson.D{{Key: "_id", Value: leaseID},
		{Key: "owner", Value: "dead-2"}, {Key: "expires", Value: time.Now().Add(-time.Second).UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	// The first write finds the chunk absent and inserts it, taking no lease; the second
	// updates it and meets the dead writer's lease.
	allStored(t, e.write(t, conv, []*im.Message{msg(1, "a")}))
	armed.Store(true)
	if _, err := store.WriteMessages(writeCtx, conv, []*im.Message{msg(2, "a")}); err == nil {
		t.Fatal("the write whose caller gave up succeeded: the test did not cut it")
	}
	writeSoon(t, e, store, msg(2, "b"), "the next write still waits for the dead writer's lease")
}

// writeSoon writes m through store and fails the test (with what the lease collection holds)
// if the write does not complete within 20 s: a lease no one can take over.
func writeSoon(t *testing.T, e *env, store *chunkstore.Store, m *im.Message, stuck string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := store.WriteMessages(e.ctx, conv, []*im.Message{m})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s; leases: %v", stuck, leaseDocs(t, e))
	}
}

// Ensure a dead writer's lease is taken over even when the waiter that began taking it over
// died too, leaving its marker behind: the next generation's marker lets another waiter finish.
func TestLeaseTakeOverAfterTheTakerDied(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	e := &env{ctx: context.Background(), store: connect(t, m, false), db: m.Connect(t, nil)}
	allStored(t, e.write(t, conv, []*im.Message{msg(1, "a")}))
	leaseID := chunkstore.CollectionChunks + "|" + conv + ":0"
	leases := e.db.Collection(chunkstore.CollectionLeases)
	long := time.Now().Add(-time.Hour).UnixMilli()
	for _, d := range []bson.D{
		{{Key: "_id", Value: leaseID}, {Key: "owner", Value: "dead-3"}, {Key: "expires", Value: long}},
		{{Key: "_id", Value: "takeover|" + leaseID + "|dead-3"}, {Key: "owner", Value: "dead-taker"}, {Key: "expires", Value: long}},
	} {
		if _, err := leases.InsertOne(e.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	writeSoon(t, e, e.store, msg(2, "a"), "the write still waits for a lease whose taker died")
	sameMsg(t, "seq 2", e.chunk(t, conv+":0").Slot(2), msg(2, "a"))
	ids := leaseDocs(t, e)
	want := []string{"takeover|" + leaseID + "|dead-3", "takeover|" + leaseID + "|dead-3|1"}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("lease documents %v, want the two markers %v", ids, want)
	}
}
