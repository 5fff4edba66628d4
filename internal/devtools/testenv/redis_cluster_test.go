package testenv_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

// Ensure the cluster is a real three-master cluster: every node reports it ok with all slots
// assigned, keys spread over the masters, a script may touch several keys of one hash tag but
// not keys of different slots, and FlushAll empties every master.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := testenv.RedisCluster(t)
	t.Logf("three-master cluster ready in %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if n := len(c.Addrs()); n != 3 {
		t.Fatalf("%d nodes, want 3", n)
	}
	nodes := make([]*redis.Client, len(c.Addrs()))
	for i, addr := range c.Addrs() {
		nodes[i] = redis.NewClient(&redis.Options{Addr: addr})
		defer nodes[i].Close()
		info, err := nodes[i].ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatalf("CLUSTER INFO on %s: %v", addr, err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:3", "cluster_size:3"} {
			if !strings.Contains(info, want+"\r\n") {
				t.Fatalf("node %s: CLUSTER INFO lacks %q:\n%s", addr, want, info)
			}
		}
	}

	opts, err := redis.ParseClusterURL(strings.Replace(c.URL(), "redis+cluster://", "redis://", 1))
	if err != nil {
		t.Fatalf("URL %s: %v", c.URL(), err)
	}
	if len(opts.Addrs) != 3 {
		t.Fatalf("URL %s names %v, want the three nodes", c.URL(), opts.Addrs)
	}
	rdb := redis.NewClusterClient(opts)
	defer rdb.Close()

	// Two keys with one hash tag share a slot, so one script may update both.
	swap := redis.NewScript(`
local a = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], redis.call('GET', KEYS[2]))
redis.call('SET', KEYS[2], a)
return redis.call('MGET', KEYS[1], KEYS[2])`)
	if err := rdb.MSet(ctx, "{conv}:a", "1", "{conv}:b", "2").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := swap.Run(ctx, rdb, []string{"{conv}:a", "{conv}:b"}).StringSlice()
	if err != nil {
		t.Fatalf("script over one hash tag: %v", err)
	}
	if strings.Join(got, ",") != "2,1" {
		t.Fatalf("script over one hash tag answered %v, want [2 1]", got)
	}
	// Keys of different slots may not meet in one script: the cluster is real.
	err = swap.Run(ctx, rdb, []string{"{conv}:a", "{other}:b"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("script over two slots: err %v, want CROSSSLOT", err)
	}

	fill := func() {
		t.Helper()
		for i := range 30 {
			if err := rdb.Set(ctx, "{k"+string(rune('a'+i))+"}", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	keysPerNode := func() []int64 {
		t.Helper()
		sizes := make([]int64, len(nodes))
		for i, n := range nodes {
			size, err := n.DBSize(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			sizes[i] = size
		}
		return sizes
	}
	fill()
	if sizes := keysPerNode(); slices.Contains(sizes, 0) {
		t.Fatalf("30 keys over the masters: %v keys each, want some on every one", sizes)
	}
	c.FlushAll(t)
	if sizes := keysPerNode(); slices.Max(sizes) != 0 {
		t.Fatalf("after FlushAll: %v keys per master, want none", sizes)
	}
}

// Ensure what RedisRoundTrips records on a cluster client: a pipeline over keys on all three
// masters is one round trip for a hook on the cluster client, while the node clients each
// send their share.
func TestRedisRoundTripsOnCluster(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	trips, perNode := &testenv.RedisRoundTrips{}, &testenv.RedisRoundTrips{}
	rdb.AddHook(trips)
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(perNode) })

	// One key on each master.
	var keys []string
	owners := map[string]bool{}
	for i := 0; len(owners) < 3; i++ {
		key := "{k" + string(rune('a'+i)) + "}"
		node, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if owner := node.Options().Addr; !owners[owner] {
			owners[owner] = true
			keys = append(keys, key)
		}
	}
	trips.Take()
	perNode.Take()

	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Get(ctx, k)
		}
		return nil
	}); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if got := trips.Take(); len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("cluster hook recorded %v, want one round trip of three GETs", got)
	}
	if n := testenv.Matching(perNode.Take(), "get {k"); n != 3 {
		t.Fatalf("node hooks recorded %d pipelines with a GET, want one per master", n)
	}
}
