package cache_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
)

// env is one test's view of one Redis topology: a client with the round-trip counter, and a
// Cache over it with key prefix "t:". The Redis behind it is empty when the test starts.
type env struct {
	ctx   context.Context
	rdb   redis.UniversalClient
	cache *cache.Cache
	trips *testenv.RedisRoundTrips
	// connect returns a new client of the same Redis, as another gateway instance would have.
	connect func() redis.UniversalClient
	// stop takes the whole Redis down; nil unless the test owns its servers.
	stop func()
}

// eachTopology runs run as two parallel subtests: "single", on a redis-server of its own, and
// "cluster", on the three-master Redis Cluster this test binary shares. A cluster subtest has
// the cluster to itself while it runs (the others wait their turn) and finds it emptied of
// keys and scripts. As it holds the cluster, run must not start parallel subtests (they would
// wait behind their parent for a cluster it never releases), nor stop Redis (see
// eachTopologyToStop). To make Redis lose its keys, use e.flushAll, not e.rdb.FlushAll.
func eachTopology(t *testing.T, run func(t *testing.T, e *env)) {
	t.Helper()
	onTopologies(t, run, openSharedCluster)
}

// eachTopologyToStop is eachTopology for tests that take Redis down (e.stop): each subtest
// owns its servers, a cluster of its own in the cluster case, which costs about two seconds
// to start.
func eachTopologyToStop(t *testing.T, run func(t *testing.T, e *env)) {
	t.Helper()
	onTopologies(t, run, func(t *testing.T) *env {
		c := testenv.RedisCluster(t)
		e := openCluster(t, c)
		e.stop = c.Stop
		return e
	})
}

// onTopologies runs run as the parallel subtests "single" and "cluster", the latter on the
// env that cluster opens.
func onTopologies(t *testing.T, run func(t *testing.T, e *env), cluster func(t *testing.T) *env) {
	t.Helper()
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		run(t, openSingle(t))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		run(t, cluster(t))
	})
}

// openSingle starts a redis-server for the test.
func openSingle(t *testing.T) *env {
	t.Helper()
	srv := testenv.Redis(t)
	connect := func() redis.UniversalClient {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(),
			MaxRetries: 1, MaxRetryBackoff: 100 * time.Millisecond, DialTimeout: 2 * time.Second, DialerRetries: 1})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	e := newEnv(t, connect)
	e.stop = srv.Stop
	return e
}

// sharedCluster is the Redis Cluster of this test binary: started by the first cluster
// subtest, stopped by TestMain, used by one subtest at a time.
var sharedCluster struct {
	once sync.Once
	c    *testenv.RedisClusterServer
	err  error
	mu   sync.Mutex
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedCluster.c != nil {
		sharedCluster.c.Stop()
	}
	os.Exit(code)
}

// openSharedCluster waits for the shared cluster, empties it and holds it until the test ends.
func openSharedCluster(t *testing.T) *env {
	t.Helper()
	sharedCluster.once.Do(func() { sharedCluster.c, sharedCluster.err = testenv.StartRedisCluster() })
	if sharedCluster.err != nil {
		t.Fatalf("Redis Cluster: %v", sharedCluster.err)
	}
	sharedCluster.mu.Lock()
	t.Cleanup(sharedCluster.mu.Unlock)
	// As fresh as a new server: no keys from the previous test, and no cached scripts, so that
	// a script's first run costs the same round trips as on a single node.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, addr := range sharedCluster.c.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		err := errors.Join(node.FlushAll(ctx).Err(), node.ScriptFlush(ctx).Err())
		_ = node.Close()
		if err != nil {
			t.Fatalf("empty cluster node %s: %v", addr, err)
		}
	}
	return openCluster(t, sharedCluster.c)
}

// openCluster connects to c through a cluster client, which the round-trip counter watches
// as a whole: a pipeline is one round trip however many masters it reaches (testenv's
// RedisRoundTrips says why).
func openCluster(t *testing.T, c *testenv.RedisClusterServer) *env {
	t.Helper()
	connect := func() redis.UniversalClient {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(),
			MaxRetries: 1, MaxRetryBackoff: 100 * time.Millisecond, DialTimeout: 2 * time.Second, DialerRetries: 1})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	return newEnv(t, connect)
}

// newEnv connects, attaches the round-trip counter and leaves it at zero.
func newEnv(t *testing.T, connect func() redis.UniversalClient) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	rdb := connect()
	trips := &testenv.RedisRoundTrips{}
	rdb.AddHook(trips)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	trips.Take()
	return &env{ctx: ctx, rdb: rdb, cache: cache.New(rdb, cache.Options{Prefix: "t:"}), trips: trips, connect: connect}
}

// flushAll makes Redis lose every key, as FLUSHALL on every node would. On a cluster,
// e.rdb.FlushAll is not that: go-redis sends it to one master only.
func (e *env) flushAll(t *testing.T) {
	t.Helper()
	var err error
	if cluster, ok := e.rdb.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(e.ctx, func(ctx context.Context, master *redis.Client) error {
			return master.FlushAll(ctx).Err()
		})
	} else {
		err = e.rdb.FlushAll(e.ctx).Err()
	}
	if err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
}

// stopRedis takes Redis down; only tests run by eachTopologyToStop may.
func (e *env) stopRedis(t *testing.T) {
	t.Helper()
	if e.stop == nil {
		t.Fatal("this test shares its Redis; run it with eachTopologyToStop to stop Redis")
	}
	e.stop()
}

// roundTrips fails unless exactly want round trips happened since the last check.
func (e *env) roundTrips(t *testing.T, what string, want int64) {
	t.Helper()
	if got := int64(len(e.trips.Take())); got != want {
		t.Fatalf("%s: %d round trips, want %d", what, got, want)
	}
}

func testChunk(docID string, seqs ...int64) *im.Chunk {
	c := im.NewChunk(docID)
	for _, seq := range seqs {
		c.Slot(seq).Msg = &im.Message{SendID: "alice", RecvID: "bob", ClientMsgID: "c" + docID, Content: "hello", Seq: seq, SendTime: 1700000000000 + seq}
	}
	return c
}

func (e *env) get(t *testing.T, docIDs ...string) []cache.ChunkEntry {
	t.Helper()
	got, err := e.cache.GetChunks(e.ctx, docIDs)
	if err != nil {
		t.Fatalf("GetChunks: %v", err)
	}
	if len(got) != len(docIDs) {
		t.Fatalf("GetChunks returned %d entries for %d ids", len(got), len(docIDs))
	}
	return got
}

// Ensure a miss, a fill and a hit, each in one round trip, give back the chunk as filled.
func TestChunkMissFillHit(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		const d0, d1 = "si_alice_bob:0", "si_alice_bob:1"
		c0, c1 := testChunk(d0, 1, 2, 100), testChunk(d1, 101)
		c0.Slot(2).Revoke = &im.Revoke{UserID: "alice", Role: 20, Time: 5}
		c0.Slot(2).DelList = []string{"bob"}
		c0.Slot(100).IsRead = true

		miss := e.get(t, d0, d1)
		e.roundTrips(t, "GetChunks miss", 1)
		for i, m := range miss {
			if m.Chunk != nil || m.Version != "" {
				t.Fatalf("entry %d on an empty cache = %+v, want a miss with no version", i, m)
			}
		}
		if err := e.cache.FillChunks(e.ctx, []cache.ChunkFill{{Chunk: c0, Version: miss[0].Version}, {Chunk: c1, Version: miss[1].Version}}); err != nil {
			t.Fatal(err)
		}
		e.roundTrips(t, "FillChunks", 1)

		hit := e.get(t, d1, "si_alice_bob:7", d0)
		e.roundTrips(t, "GetChunks hit", 1)
		if hit[1].Chunk != nil {
			t.Fatalf("never filled chunk came back: %+v", hit[1].Chunk)
		}
		for _, tc := range []struct {
			got, want *im.Chunk
		}{{hit[2].Chunk, c0}, {hit[0].Chunk, c1}} {
			if tc.got == nil {
				t.Fatalf("chunk %s: miss after fill", tc.want.DocID)
			}
			if tc.got.DocID != tc.want.DocID || len(tc.got.Slots) != im.ChunkSize {
				t.Fatalf("chunk %s: got %s with %d slots", tc.want.DocID, tc.got.DocID, len(tc.got.Slots))
			}
			for i := range tc.want.Slots {
				g, w := tc.got.Slots[i], tc.want.Slots[i]
				if (g.Msg == nil) != (w.Msg == nil) || g.IsRead != w.IsRead || len(g.DelList) != len(w.DelList) || (g.Revoke == nil) != (w.Revoke == nil) {
					t.Fatalf("chunk %s slot %d = %+v, want %+v", tc.want.DocID, i, g, w)
				}
				if w.Msg != nil && (g.Msg.Content != w.Msg.Content || g.Msg.Seq != w.Msg.Seq || g.Msg.SendTime != w.Msg.SendTime || g.Msg.ClientMsgID != w.Msg.ClientMsgID) {
					t.Fatalf("chunk %s slot %d message = %+v, want %+v", tc.want.DocID, i, *g.Msg, *w.Msg)
				}
			}
		}
		s := hit[2].Chunk.Slot(2)
		if *s.Revoke != *c0.Slot(2).Revoke || s.DelList[0] != "bob" {
			t.Fatalf("slot state lost: %+v", s)
		}

		// Ensure an undecodable entry reads as a miss, not an error.
		if err := e.rdb.HSet(e.ctx, "t:{si_alice_bob}:chunk:1", "data", "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, d1); got[0].Chunk != nil {
			t.Fatalf("garbage decoded as %+v", got[0].Chunk)
		}
	})
}

// Ensure a fill by a reader that looked before a write is dropped.
func TestChunkStaleFillDropped(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		const d = "sg_team:0"

		before := e.get(t, d)[0]
		if err := e.cache.InvalidateChunks(e.ctx, []string{d}); err != nil {
			t.Fatal(err)
		}
		e.trips.Take()
		if err := e.cache.FillChunks(e.ctx, []cache.ChunkFill{{Chunk: testChunk(d, 1), Version: before.Version}}); err != nil {
			t.Fatal(err)
		}
		after := e.get(t, d)[0]
		if after.Chunk != nil {
			t.Fatal("a fill with the version from before the write was cached")
		}
		if after.Version == before.Version {
			t.Fatalf("version stayed %q across an invalidation", after.Version)
		}

		t.Run("a fresh read fills", func(t *testing.T) {
			fresh := testChunk(d, 1, 2)
			if err := e.cache.FillChunks(e.ctx, []cache.ChunkFill{{Chunk: fresh, Version: after.Version}}); err != nil {
				t.Fatal(err)
			}
			got := e.get(t, d)[0]
			if got.Chunk == nil || got.Chunk.Slot(2).Msg == nil || got.Chunk.Slot(2).Msg.Seq != 2 {
				t.Fatalf("fresh fill not served: %+v", got.Chunk)
			}
			if got.Version != after.Version {
				t.Fatalf("version moved from %q to %q on a fill", after.Version, got.Version)
			}
		})

		t.Run("a write drops the cached chunk and stale fills", func(t *testing.T) {
			seen := e.get(t, d)[0]
			if err := e.cache.InvalidateChunks(e.ctx, []string{d}); err != nil {
				t.Fatal(err)
			}
			if err := e.cache.FillChunks(e.ctx, []cache.ChunkFill{{Chunk: testChunk(d, 1), Version: seen.Version}}); err != nil {
				t.Fatal(err)
			}
			if got := e.get(t, d)[0]; got.Chunk != nil {
				t.Fatalf("chunk still served after invalidation: %+v", got)
			}
		})
	})
}

// getStates reads one user's state query, the conversations' seq states and (userID not
// empty) the user's read states, aligned with conversationIDs.
func getStates(ctx context.Context, c *cache.Cache, userID string, conversationIDs []string) ([]cache.ConversationState, []cache.UserState, error) {
	res, err := c.GetStatesMany(ctx, []cache.StateQuery{{UserID: userID, ConversationIDs: conversationIDs}}, false)
	if err != nil {
		return nil, nil, err
	}
	return res.Conversations[0], res.Users[0], nil
}

// Ensure every chunk write moves its conversation's chunks version, which readers get with the
// seq state in the same round trip, and that a version Redis lost (a restart) starts again
// somewhere no reader saw before.
func TestChunksVersion(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		const conv = "sg_versions"
		version := func() string {
			t.Helper()
			e.trips.Take()
			convs, _, err := getStates(e.ctx, e.cache, "", []string{conv})
			if err != nil {
				t.Fatal(err)
			}
			e.roundTrips(t, "GetStates", 1)
			return convs[0].ChunksVersion
		}
		raise := func() {
			t.Helper()
			if err := e.cache.RaiseStates(e.ctx, []cache.ConversationRaise{{ConversationID: conv, MaxSeq: ptr(150), MinSeq: ptr(0), LastTime: ptr(1)}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		raise()
		seen := map[string]bool{}
		v := version()
		if v == "" {
			t.Fatal("a filled state has no chunks version")
		}
		seen[v] = true
		for _, docIDs := range [][]string{{conv + ":0"}, {conv + ":1"}, {conv + ":0", conv + ":1"}} {
			if err := e.cache.InvalidateChunks(e.ctx, docIDs); err != nil {
				t.Fatal(err)
			}
			next := version()
			if next == "" || seen[next] {
				t.Fatalf("after invalidating %v the version is %q, seen before: %v", docIDs, next, seen)
			}
			seen[next] = true
		}
		raise()
		if got := version(); !seen[got] {
			t.Fatalf("a raise of max seq moved the chunks version to %q", got)
		}

		// Redis loses the keys: no version until a write or a fill gives one, and never one seen
		// before.
		for _, key := range []string{"t:{" + conv + "}:seqstate", "t:{" + conv + "}:chunk:0", "t:{" + conv + "}:chunk:1"} {
			if err := e.rdb.Del(e.ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if got := version(); got != "" {
			t.Fatalf("version %q without a state", got)
		}
		if err := e.cache.InvalidateChunks(e.ctx, []string{conv + ":0"}); err != nil {
			t.Fatal(err)
		}
		raise()
		if got := version(); got == "" || seen[got] {
			t.Fatalf("version after the keys were lost: %q, seen before: %v", got, seen)
		}
	})
}

func ptr(v int64) *int64 { return &v }

// Ensure seq state only goes up and is read, conversations and user together, in one round trip.
func TestStates(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		const c1, c2, c3 = "sg_a", "sg_b", "sg_c"

		err := e.cache.RaiseStates(e.ctx,
			[]cache.ConversationRaise{{ConversationID: c1, MaxSeq: ptr(10), MinSeq: ptr(1), LastTime: ptr(1000)}, {ConversationID: c2, MaxSeq: ptr(4)}},
			[]cache.UserRaise{{UserID: "u1", ConversationID: c1, ReadSeq: ptr(5), UserMinSeq: ptr(0)}, {UserID: "u1", ConversationID: c2, ReadSeq: ptr(3)}})
		if err != nil {
			t.Fatal(err)
		}
		e.roundTrips(t, "RaiseStates", 1)

		// Lower values leave the higher ones in place; higher ones win.
		err = e.cache.RaiseStates(e.ctx,
			[]cache.ConversationRaise{{ConversationID: c1, MaxSeq: ptr(7), MinSeq: ptr(3), LastTime: ptr(900)}},
			[]cache.UserRaise{{UserID: "u1", ConversationID: c1, ReadSeq: ptr(2), UserMinSeq: ptr(0)}})
		if err != nil {
			t.Fatal(err)
		}
		e.trips.Take()

		convs, users, err := getStates(e.ctx, e.cache, "u1", []string{c1, c2, c3})
		if err != nil {
			t.Fatal(err)
		}
		e.roundTrips(t, "GetStates", 1)
		if len(convs) != 3 || len(users) != 3 {
			t.Fatalf("got %d conversation and %d user states for 3 ids", len(convs), len(users))
		}
		// Filling a conversation's state gives it a chunks version, which raises leave alone.
		if convs[0].ChunksVersion == "" {
			t.Fatalf("%s has no chunks version: %+v", c1, convs[0])
		}
		if want := (cache.ConversationState{MaxSeq: 10, MinSeq: 3, LastTime: 1000, ChunksVersion: convs[0].ChunksVersion, Cached: true}); convs[0] != want {
			t.Fatalf("%s = %+v, want %+v", c1, convs[0], want)
		}
		if want := (cache.UserState{ReadSeq: 5, UserMinSeq: 0, Cached: true}); users[0] != want {
			t.Fatalf("u1 in %s = %+v, want %+v", c1, users[0], want)
		}
		// Half-filled entries (max without min and time, read seq without min seq) are misses.
		if want := (cache.ConversationState{}); convs[1] != want {
			t.Fatalf("half-filled %s = %+v, want a miss with zero fields", c2, convs[1])
		}
		if want := (cache.UserState{}); users[1] != want {
			t.Fatalf("half-filled u1 in %s = %+v, want a miss with zero fields", c2, users[1])
		}
		if convs[2].Cached || users[2].Cached {
			t.Fatalf("%s never raised: %+v %+v", c3, convs[2], users[2])
		}

		t.Run("completing an entry makes it cached", func(t *testing.T) {
			if err := e.cache.RaiseStates(e.ctx, []cache.ConversationRaise{{ConversationID: c2, MinSeq: ptr(1), MaxSeq: ptr(12), LastTime: ptr(5)}}, nil); err != nil {
				t.Fatal(err)
			}
			convs, users, err := getStates(e.ctx, e.cache, "", []string{c2})
			if err != nil {
				t.Fatal(err)
			}
			if want := (cache.ConversationState{MaxSeq: 12, MinSeq: 1, LastTime: 5, ChunksVersion: convs[0].ChunksVersion, Cached: true}); convs[0] != want || want.ChunksVersion == "" {
				t.Fatalf("%s = %+v, want %+v with a chunks version", c2, convs[0], want)
			}
			if users[0].Cached {
				t.Fatalf("no user asked, got %+v", users[0])
			}
		})
	})
}

// Ensure the allocator asks for initialisation once, hands out consecutive seqs from the block,
// asks for a new block when it runs out and starts over after Redis loses its keys.
func TestAllocator(t *testing.T) {
	t.Parallel()
	eachTopology(t, func(t *testing.T, e *env) {
		const c = "si_alice_bob"
		alloc := func(n int64, token string, wantState cache.AllocState, wantFirst int64) {
			t.Helper()
			state, first, err := e.cache.AllocSeqs(e.ctx, c, n, token)
			if err != nil {
				t.Fatal(err)
			}
			if state != wantState || first != wantFirst {
				t.Fatalf("AllocSeqs(%d, %s) = %d, %d; want %d, %d", n, token, state, first, wantState, wantFirst)
			}
		}
		setBlock := func(token string, storedMax, blockEnd int64, want bool) {
			t.Helper()
			ok, err := e.cache.SetAllocBlock(e.ctx, c, token, storedMax, blockEnd)
			if err != nil {
				t.Fatal(err)
			}
			if ok != want {
				t.Fatalf("SetAllocBlock(%s, %d, %d) = %v, want %v", token, storedMax, blockEnd, ok, want)
			}
		}

		alloc(5, "A", cache.NeedInit, 0)
		alloc(5, "B", cache.Busy, 0)
		setBlock("B", 10, 110, false)
		alloc(5, "B", cache.Busy, 0) // the wrong token released nothing
		setBlock("A", 10, 110, true)
		alloc(5, "B", cache.Allocated, 11)
		alloc(5, "A", cache.Allocated, 16)
		alloc(90, "A", cache.Allocated, 21) // exactly to the end of the block
		alloc(1, "A", cache.NeedBlock, 0)
		alloc(1, "B", cache.Busy, 0)
		setBlock("A", 999, 210, true) // the position survives: storedMax only seeds a new allocator
		alloc(1, "B", cache.Allocated, 111)

		e.flushAll(t)
		alloc(1, "C", cache.NeedInit, 0)
		setBlock("C", 150, 250, true)
		alloc(2, "C", cache.Allocated, 151)
	})
}

// Ensure a Redis that is down is reported as unavailable, not as a miss or an internal error.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	eachTopologyToStop(t, func(t *testing.T, e *env) {
		e.stopRedis(t)
		// go-redis retries each dial for a few seconds before it gives up: run the calls side by side.
		for name, call := range map[string]func(ctx context.Context) error{
			"GetChunks": func(ctx context.Context) error {
				_, err := e.cache.GetChunks(ctx, []string{"si_alice_bob:0"})
				return err
			},
			"GetStatesMany": func(ctx context.Context) error {
				_, _, err := getStates(ctx, e.cache, "u1", []string{"si_alice_bob"})
				return err
			},
			"AllocSeqs": func(ctx context.Context) error {
				_, _, err := e.cache.AllocSeqs(ctx, "si_alice_bob", 1, "A")
				return err
			},
			"InvalidateChunks": func(ctx context.Context) error {
				return e.cache.InvalidateChunks(ctx, []string{"si_alice_bob:0"})
			},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
				defer cancel()
				err := call(ctx)
				if code := im.ErrorCode(err); code != im.EUNAVAILABLE {
					t.Fatalf("%s with Redis down: err=%v code=%q, want %q", name, err, code, im.EUNAVAILABLE)
				}
			})
		}
	})
}
