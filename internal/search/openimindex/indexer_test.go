package openimindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/bleveindex"
	"github.com/msggate/msggate/internal/search/openimindex"
	"github.com/msggate/msggate/internal/search/pgindex"
)

// switchable is an index that can be taken down: while down it takes no change.
type switchable struct {
	search.Engine
	down atomic.Bool
}

func (s *switchable) Apply(ctx context.Context, changes []search.Change) error {
	if s.down.Load() {
		return fmt.Errorf("%w: switched off by the test", search.ErrUnavailable)
	}
	return s.Engine.Apply(ctx, changes)
}

func onEachEngine(t *testing.T, test func(*testing.T, search.Engine)) {
	t.Run("bleve", func(t *testing.T) {
		x, err := bleveindex.Open(filepath.Join(t.TempDir(), "index"), bleveindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.Close() })
		test(t, x)
	})
	t.Run("postgres", func(t *testing.T) {
		x, err := pgindex.Open(context.Background(), testenv.Postgres(t).URL(), pgindex.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.Close() })
		test(t, x)
	})
}

// Ensure the seqs the follower touched are kept in msggate's Redis while the index is down,
// and indexed as OpenIM's stores show them when it returns: a revoke made during the outage
// leaves its message out, a message only OpenIM's message cache holds yet is found, a delete
// for one user hides it for that user only, and telling the same seqs again changes nothing.
func TestIndexerKeepsABacklogWhileTheIndexIsDown(t *testing.T) {
	onEachEngine(t, testBacklog)
}

func testBacklog(t *testing.T, engine search.Engine) {
	ctx := context.Background()
	d, st, own := openDeployment(t)

	index := &switchable{Engine: engine}
	x := openimindex.New(st, own, index, openimindex.Options{Interval: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); x.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	const conv = "si_alice_bob"
	msg := func(s string) *openimtest.MsgData {
		return openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent(s))
	}
	index.down.Store(true)
	seqs := d.Send(conv, msg("outage one"), msg("outage two"))
	seqs = append(seqs, d.SendInFlight(conv, msg("outage three, in flight"))...)
	keys := func(seqs ...int64) []search.Key {
		var out []search.Key
		for _, s := range seqs {
			out = append(out, search.Key{ConversationID: conv, Seq: s})
		}
		return out
	}
	if err := x.Touched(ctx, keys(seqs...)); err != nil {
		t.Fatalf("keeping the touched seqs with the index down: %v", err)
	}
	find := func(viewer string) []int64 {
		t.Helper()
		res, err := engine.Search(ctx, search.Request{Viewer: viewer, Text: "outage", Scopes: []search.Scope{{ConversationID: conv}}, First: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, h := range res.Hits {
			out = append(out, h.Seq)
		}
		if res.Count != len(out) {
			t.Errorf("%s: count %d for %d hits", viewer, res.Count, len(out))
		}
		return out
	}
	time.Sleep(300 * time.Millisecond) // several passes fail meanwhile
	if n, err := own.SearchBacklogLen(ctx); err != nil || n != 3 {
		t.Fatalf("backlog with the index down: %d (%v), want the 3 seqs", n, err)
	}
	if got := find("bob"); len(got) != 0 {
		t.Fatalf("found %v with the index down", got)
	}
	d.Revoke(conv, seqs[1], openimtest.Revoke{UserID: "alice"})
	if err := x.Touched(ctx, keys(seqs[1])); err != nil {
		t.Fatal(err)
	}

	index.down.Store(false)
	want := []int64{seqs[2], seqs[0]}
	eventually(t, "the backlog indexed once the index is back", func() bool {
		n, err := own.SearchBacklogLen(ctx)
		return err == nil && n == 0 && slices.Equal(find("bob"), want)
	})

	d.DeleteForMe(conv, "bob", seqs[0])
	if err := x.Touched(ctx, keys(seqs...)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete for bob indexed", func() bool { return slices.Equal(find("bob"), []int64{seqs[2]}) })
	if got := find("alice"); !slices.Equal(got, want) {
		t.Errorf("alice after bob deleted for himself finds %v, want %v", got, want)
	}
	if err := x.Touched(ctx, keys(seqs...)); err != nil {
		t.Fatal(err)
	}
	if err := x.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if got := find("alice"); !slices.Equal(got, want) {
		t.Errorf("after the same seqs were told again alice finds %v, want %v", got, want)
	}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// revokingSource is OpenIM's stores whose first read, once it has read the slots, lets revoke
// run before it returns them: a revoke that lands between an indexer's read of a slot and its
// write of it, every time.
type revokingSource struct {
	openimindex.Source
	once   sync.Once
	revoke func()
}

func (s *revokingSource) Chunks(ctx context.Context, groups []im.SeqGroup) ([]*im.Chunk, error) {
	chunks, err := s.Source.Chunks(ctx, groups)
	if err == nil {
		s.once.Do(s.revoke)
	}
	return chunks, err
}

// Ensure an indexer that read a slot just before a revoke, and writes it just after another
// gateway indexed that revoke on the same index, leaves the message out: neither a hit nor
// counted.
func TestIndexerRacingARevokeLeavesItOut(t *testing.T) {
	onEachEngine(t, testIndexerRacingARevoke)
}

func testIndexerRacingARevoke(t *testing.T, engine search.Engine) {
	ctx := context.Background()
	d, st, own := openDeployment(t)

	const conv = "si_alice_bob"
	var seqs []int64
	for _, text := range []string{"racing one", "racing two", "racing three"} {
		seqs = append(seqs, d.Send(conv, openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent(text)))...)
	}
	keys := make([]search.Key, len(seqs))
	for i, s := range seqs {
		keys[i] = search.Key{ConversationID: conv, Seq: s}
	}
	src := &revokingSource{Source: st, revoke: func() {
		// OpenIM stores the revoke, and the gateway that read its record indexes it first.
		d.Revoke(conv, seqs[1], openimtest.Revoke{UserID: "alice"})
		if err := engine.Apply(ctx, []search.Change{{Remove: &keys[1]}}); err != nil {
			t.Error(err)
		}
	}}
	x := openimindex.New(src, own, engine, openimindex.Options{})
	if err := x.Touched(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if err := x.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Search(ctx, search.Request{Viewer: "bob", Text: "racing", Scopes: []search.Scope{{ConversationID: conv}}, First: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 2 || len(res.Hits) != 2 {
		t.Errorf("after an indexer raced the revoke of seq %d bob finds %d (count %d), want 2", seqs[1], len(res.Hits), res.Count)
	}
}

// openDeployment starts an OpenIM deployment of the test's own (its MongoDB and Redis), opens
// msggate's read-only view of it, and dials msggate's own Redis.
func openDeployment(t *testing.T) (*openimtest.Deployment, *openim.Store, *cache.Cache) {
	t.Helper()
	mdb := testenv.Mongo(t)
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	d := openimtest.New(t, mdb.Connect(t, nil), rdb)
	st, err := openim.Open(context.Background(), mdb.Connect(t, nil), rdb, openim.Options{Secret: d.Secret})
	if err != nil {
		t.Fatal(err)
	}
	own, err := cache.Dial(testenv.Redis(t).URL(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Close() })
	return d, st, own
}
