package retention_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/retention"
	imsync "github.com/msggate/msggate/internal/sync"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const maxAge = 30 * 24 * time.Hour

// Send times relative to the job's cutoff (now - maxAge).
var (
	oldTime    = now.Add(-maxAge - time.Hour).UnixMilli()
	recentTime = now.Add(-maxAge + time.Hour).UnixMilli()
)

type env struct {
	ctx    context.Context
	store  *chunkstore.Store
	cache  *cache.Cache
	ledger *imsync.Ledger
}

func open(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	store, err := chunkstore.Open(ctx, testenv.Mongo(t).Connect(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	return &env{ctx: ctx, store: store, cache: c, ledger: imsync.NewLedger(store, c, imsync.Options{})}
}

// store writes messages from..to of a conversation with the given send time and records
// them as stored, as the ingest path does.
func (e *env) write(t *testing.T, conv string, from, to, sendTime int64) {
	t.Helper()
	var msgs []*im.Message
	for s := from; s <= to; s++ {
		msgs = append(msgs, &im.Message{SendID: "alice", GroupID: conv[3:], ClientMsgID: fmt.Sprint(conv, s), Content: "x", Seq: s, SendTime: sendTime})
	}
	if _, err := e.store.WriteMessages(e.ctx, conv, msgs); err != nil {
		t.Fatal(err)
	}
	if err := e.ledger.RecordStored(e.ctx, []imsync.StoredMessage{{ConversationID: conv, Seq: to, SendID: "alice", SendTime: sendTime}}); err != nil {
		t.Fatal(err)
	}
}

// exist reports which of the conversation's chunks 0..n-1 exist in MongoDB, as "0 1 -".
func (e *env) exist(t *testing.T, conv string, n int64) string {
	t.Helper()
	cs, err := e.store.FindChunkRange(e.ctx, conv, 0, n-1)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += " "
		}
		if c == nil {
			out += "-"
		} else {
			out += fmt.Sprint(i)
		}
	}
	return out
}

func (e *env) minSeq(t *testing.T, conv string) int64 {
	t.Helper()
	st, err := e.ledger.States(e.ctx, "", []string{conv})
	if err != nil {
		t.Fatal(err)
	}
	return st[0].MinSeq
}

func (e *env) job(opts retention.Options) *retention.Job {
	opts.MaxAge, opts.Now = maxAge, func() time.Time { return now }
	return retention.New(e.store, e.cache, e.ledger, opts)
}

// Ensure one run deletes the old chunks of every conversation (paging through them), raises
// min seqs through the ledger (the cached state shows it), drops the deleted chunks from the
// chunk cache, keeps every chunk with a recent message, and that a second run finds nothing.
func TestRunOnceDeletesOldChunks(t *testing.T) {
	t.Parallel()
	e := open(t)
	e.write(t, "sg_old", 1, 250, oldTime)
	e.write(t, "sg_mixed", 1, 150, oldTime)
	e.write(t, "sg_mixed", 151, 151, recentTime)
	e.write(t, "sg_mixed", 152, 160, oldTime)
	e.write(t, "sg_new", 1, 20, recentTime)
	// A seq document of a conversation ID msggate does not serve (a foreign store's).
	if err := e.store.RaiseMaxSeqs(e.ctx, map[string]chunkstore.StoredMax{"legacy": {Seq: 5, Time: oldTime}}); err != nil {
		t.Fatal(err)
	}
	// Warm the chunk cache, as reads would have.
	reader := cache.NewReadThrough(e.store, e.cache, nil)
	if _, err := reader.FindChunks(e.ctx, []string{"sg_old:0", "sg_old:2", "sg_mixed:0"}); err != nil {
		t.Fatal(err)
	}

	var reports []retention.Summary
	job := e.job(retention.Options{PageSize: 1, ProgressEvery: 2, Progress: func(s retention.Summary) { reports = append(reports, s) }})
	sum, err := job.RunOnce(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := retention.Summary{Cutoff: now.Add(-maxAge), Conversations: 4, ChunksDeleted: 4, MinSeqsRaised: 2, Skipped: 1}
	if sum != want {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
	if len(reports) != 3 || reports[0].Conversations != 2 || reports[1].Conversations != 4 || reports[2] != sum {
		t.Errorf("progress reports %+v", reports)
	}
	for conv, wantChunks := range map[string]string{"sg_old": "- - -", "sg_mixed": "- 1", "sg_new": "0"} {
		if got := e.exist(t, conv, int64(len(wantChunks)+1)/2); got != wantChunks {
			t.Errorf("%s chunks: %s, want %s", conv, got, wantChunks)
		}
	}
	for conv, wantMin := range map[string]int64{"sg_old": 251, "sg_mixed": 151, "sg_new": 0} {
		if got := e.minSeq(t, conv); got != wantMin {
			t.Errorf("%s min seq %d, want %d", conv, got, wantMin)
		}
	}
	cached, err := e.cache.GetChunks(e.ctx, []string{"sg_old:0", "sg_old:2", "sg_mixed:0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cached {
		if c.Chunk != nil {
			t.Errorf("deleted chunk %s is still cached", c.Chunk.DocID)
		}
	}

	again, err := job.RunOnce(e.ctx)
	if err != nil || again.ChunksDeleted != 0 || again.MinSeqsRaised != 0 || again.Conversations != 4 {
		t.Fatalf("second run: %+v, %v", again, err)
	}
	// The max seq's chunk is gone; the next message recreates it and reads normally.
	e.write(t, "sg_old", 251, 251, now.UnixMilli())
	if got := e.exist(t, "sg_old", 3); got != "- - 2" {
		t.Fatalf("after a new message: %s", got)
	}
	st, err := e.ledger.States(e.ctx, "bob", []string{"sg_old"})
	if err != nil || st[0].Unread() != 1 {
		t.Fatalf("bob's unread after retention and one new message: %+v, %v", st, err)
	}
}

// Ensure a run stopped between raising the min seq and deleting is finished by the next one,
// and that a conversation with more old history than one run's bound continues over runs.
func TestRunOnceResumes(t *testing.T) {
	t.Parallel()
	e := open(t)
	e.write(t, "sg_stopped", 1, 220, oldTime)
	e.write(t, "sg_stopped", 221, 230, recentTime)
	// The min seq moved, the chunks were not deleted.
	if err := e.ledger.RaiseMinSeq(e.ctx, "sg_stopped", 201); err != nil {
		t.Fatal(err)
	}
	e.write(t, "sg_long", 1, 350, oldTime)
	e.write(t, "sg_long", 351, 351, recentTime)

	job := e.job(retention.Options{ChunksPerConversation: 2})
	sum, err := job.RunOnce(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unfinished != 1 || sum.ChunksDeleted != 4 {
		t.Fatalf("first run: %+v", sum)
	}
	if got := e.exist(t, "sg_stopped", 3); got != "- - 2" {
		t.Errorf("sg_stopped chunks: %s", got)
	}
	if got := e.minSeq(t, "sg_stopped"); got != 221 {
		t.Errorf("sg_stopped min seq %d, want 221", got)
	}
	if got, m := e.exist(t, "sg_long", 4), e.minSeq(t, "sg_long"); got != "- - 2 3" || m != 201 {
		t.Errorf("sg_long after one run: chunks %s, min seq %d", got, m)
	}
	sum, err = job.RunOnce(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, m := e.exist(t, "sg_long", 4), e.minSeq(t, "sg_long"); got != "- - - 3" || m != 351 || sum.Unfinished != 0 {
		t.Errorf("sg_long after two runs: chunks %s, min seq %d, %+v", got, m, sum)
	}
}

// Ensure a failing store stops the run with an error instead of reporting nothing to delete,
// a job without MaxAge refuses to run, and Run loops until its context ends.
func TestRunErrorsAndLoop(t *testing.T) {
	t.Parallel()
	e := open(t)
	e.write(t, "sg_a", 1, 10, oldTime)

	if _, err := retention.New(e.store, e.cache, e.ledger, retention.Options{}).RunOnce(e.ctx); !errors.Is(err, retention.ErrDisabled) {
		t.Fatalf("no MaxAge: %v", err)
	}
	if err := retention.New(e.store, e.cache, e.ledger, retention.Options{}).Run(e.ctx); !errors.Is(err, retention.ErrDisabled) {
		t.Fatalf("Run without MaxAge: %v", err)
	}
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.job(retention.Options{}).RunOnce(cancelled); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Fatalf("run on a store that cannot answer: %v, want an unavailable error", err)
	}

	runs := make(chan retention.Summary)
	ctx, stop := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	job := e.job(retention.Options{Interval: time.Millisecond, Progress: func(s retention.Summary) {
		select {
		case runs <- s:
		case <-ctx.Done(): // a run that ends after the test stopped listening
		}
	}})
	go func() { done <- job.Run(ctx) }()
	first, second := <-runs, <-runs
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after its context ended", err)
	}
	if first.ChunksDeleted != 1 || second.ChunksDeleted != 0 || second.Conversations != 1 {
		t.Fatalf("runs: %+v then %+v", first, second)
	}
}
