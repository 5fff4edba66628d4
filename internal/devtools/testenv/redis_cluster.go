package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterNodes is how many masters a test cluster has: the fewest redis-cli accepts, and
// enough that the keys of a few conversations spread over several nodes.
const clusterNodes = 3

// RedisClusterServer is a Redis Cluster of three masters (no replicas), each a redis-server
// process on its own loopback port, together holding all 16384 slots.
type RedisClusterServer struct {
	nodes []*RedisServer
	// root is removed by Stop when the cluster was not started for one test (a test's
	// t.TempDir removes itself).
	root string
}

// RedisCluster starts a three-master Redis Cluster, waits until every node reports the
// cluster healthy with every slot assigned, and stops it when the test ends. It takes about
// two seconds (a freshly started master waits 2 s before it declares the cluster ok), so a
// package whose tests share one cluster should use StartRedisCluster once instead.
func RedisCluster(t testing.TB) *RedisClusterServer {
	t.Helper()
	c, err := startRedisCluster(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// StartRedisCluster starts a cluster like RedisCluster that belongs to no test: one test
// binary's tests may share it (each under its own key prefix), started on first use and
// stopped from TestMain. The caller must call Stop, which also removes its files.
func StartRedisCluster() (*RedisClusterServer, error) {
	root, err := os.MkdirTemp("", "msggate-redis-cluster-")
	if err != nil {
		return nil, err
	}
	c, err := startRedisCluster(root)
	if err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	c.root = root
	return c, nil
}

func startRedisCluster(dir string) (c *RedisClusterServer, err error) {
	cli, err := findRedisCLI()
	if err != nil {
		return nil, err
	}
	c = &RedisClusterServer{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for i := range clusterNodes {
		nodeDir := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o755); err != nil {
			return nil, err
		}
		node, err := startRedisServer(nodeDir, true)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, node)
	}

	// redis-cli assigns the slots in three even ranges, introduces the nodes to each other
	// and waits until they agree on the slot map.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testenv: redis-cli --cluster create: %w\n%s%s", err, out, c.logs())
	}
	if err := c.waitHealthy(ctx); err != nil {
		return nil, fmt.Errorf("testenv: %w%s", err, c.logs())
	}
	return c, nil
}

// waitHealthy waits until every node answers CLUSTER INFO with state ok, all slots assigned
// and every node known: only then does any node a client asks route every key correctly.
func (c *RedisClusterServer) waitHealthy(ctx context.Context) error {
	want := []string{
		"cluster_state:ok",
		"cluster_slots_assigned:16384",
		"cluster_known_nodes:" + strconv.Itoa(clusterNodes),
	}
	var last error
	for _, addr := range c.Addrs() {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		for {
			last = nil
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil {
				for _, w := range want {
					if !strings.Contains(info, w+"\r\n") {
						last = fmt.Errorf("node %s: CLUSTER INFO lacks %s:\n%s", addr, w, info)
						break
					}
				}
			} else {
				last = fmt.Errorf("node %s: CLUSTER INFO: %w", addr, err)
			}
			if last == nil {
				break
			}
			select {
			case <-ctx.Done():
				_ = rdb.Close()
				return errors.Join(errors.New("cluster not healthy in time"), last)
			case <-time.After(20 * time.Millisecond):
			}
		}
		_ = rdb.Close()
	}
	return nil
}

// Addrs returns host:port of every node.
func (c *RedisClusterServer) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// URL returns the cluster in the form msggate's -redis-url takes:
// redis+cluster://<first node>?addr=<second node>&addr=<third node>. Any one node is enough to
// find the others; listing all of them lets the client start while one is down.
func (c *RedisClusterServer) URL() string {
	addrs := c.Addrs()
	var b strings.Builder
	b.WriteString("redis+cluster://" + addrs[0])
	for i, a := range addrs[1:] {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString("addr=" + a)
	}
	return b.String()
}

// FlushAll empties every master, as an operator's FLUSHALL on each node (or a restart of
// the whole cluster without persistence) would. Do not call it on a cluster that other
// tests are using at the same time.
func (c *RedisClusterServer) FlushAll(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range c.nodes {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
		err := rdb.FlushAll(ctx).Err()
		_ = rdb.Close()
		if err != nil {
			t.Fatalf("testenv: FLUSHALL on cluster node %s: %v", n.Addr(), err)
		}
	}
}

// Stop kills every node and waits for them to exit. Stopping a stopped cluster is a no-op.
func (c *RedisClusterServer) Stop() {
	for _, n := range c.nodes {
		n.Stop()
	}
	if c.root != "" {
		_ = os.RemoveAll(c.root)
		c.root = ""
	}
}

// logs returns what the nodes printed, for an error message.
func (c *RedisClusterServer) logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		n.mu.Lock()
		if n.logs != nil {
			fmt.Fprintf(&b, "\n--- redis-server %s ---\n%s", n.Addr(), strings.TrimSpace(n.logs.String()))
		}
		n.mu.Unlock()
	}
	return b.String()
}

// findRedisCLI finds redis-cli, which Debian's redis-tools installs next to redis-server.
func findRedisCLI() (string, error) {
	server, err := findRedisServer()
	if err != nil {
		return "", err
	}
	if p := filepath.Join(filepath.Dir(server), "redis-cli"); isFile(p) {
		return p, nil
	}
	if p, err := exec.LookPath("redis-cli"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("testenv: redis-cli not found next to %s or in PATH; "+
		"the Redis Cluster tests need it: install it with `apt-get install -y redis-tools`", server)
}
