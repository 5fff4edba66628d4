package testenv

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
)

// MongoCommands counts the commands a MongoDB client sends, by command name and target
// collection, for tests whose contract is a number of operations.
type MongoCommands struct {
	mu sync.Mutex
	n  map[string]int // "<command> <collection>" -> count
}

// Observe counts one command; it is a chunkstore.CommandStarted, for the gateway's
// Observers.OnMongoCommand.
func (c *MongoCommands) Observe(_ context.Context, command, collection string) {
	if collection == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[command+" "+collection]++
}

// Monitor returns the command monitor to install on a client the test connects itself.
func (c *MongoCommands) Monitor() *event.CommandMonitor {
	return chunkstore.StartedMonitor(c.Observe)
}

// Count returns how many of the named commands targeted coll since the last Reset.
func (c *MongoCommands) Count(coll string, names ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, name := range names {
		total += c.n[name+" "+coll]
	}
	return total
}

// Total returns how many commands targeted any collection since the last Reset.
func (c *MongoCommands) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.n {
		total += n
	}
	return total
}

// Writes counts the write commands that targeted coll since the last Reset.
func (c *MongoCommands) Writes(coll string) int {
	return c.Count(coll, "insert", "update", "delete", "findAndModify")
}

// Reset sets every count to zero.
func (c *MongoCommands) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = map[string]int{}
}

// Connect returns the test's database through a new client, watched by monitor when it is not
// nil. The client is disconnected when the test ends.
func (m *MongoDB) Connect(t testing.TB, monitor *event.CommandMonitor) *mongo.Database {
	t.Helper()
	opts := options.Client().ApplyURI(m.URI()).SetTimeout(time.Minute)
	if monitor != nil {
		opts.SetMonitor(monitor)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(m.Database())
}

// RedisRoundTrips records each round trip (one command, or one pipeline) a Redis client
// makes, as the list of its commands with their key ("hmget msggate:{c}:chunk:0"; for
// scripts, their first key). The handshake go-redis runs on every new connection (HELLO,
// CLIENT) is not recorded. Its Observe is a cache.RoundTripObserver, for the gateway's
// Observers.OnRedisRoundTrip; it is also a go-redis hook, for a client the test makes itself.
//
// On a Redis Cluster, add it to the redis.ClusterClient with AddHook: it then sees each call
// once, as the caller made it, before go-redis splits it by node. A pipeline whose keys live
// on several masters therefore counts as ONE round trip, and that is the count the contracts
// mean: go-redis sends every node its share of the pipeline at the same time, so the caller
// waits one network round trip (the slowest node's), not one per node. (A hook added to each
// node client through OnNewNode would instead see one pipeline per node contacted; the
// testenv tests show both.) Not recorded on a cluster: the client's own CLUSTER SLOTS calls
// that load the slot map, and resends after a MOVED or ASK redirect, which a stable cluster
// does not send once the map is loaded.
type RedisRoundTrips struct {
	mu    sync.Mutex
	trips [][]string
}

// DialHook implements redis.Hook.
func (h *RedisRoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h *RedisRoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return cache.RoundTripHook(h.Observe).ProcessHook(next)
}

// ProcessPipelineHook implements redis.Hook.
func (h *RedisRoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return cache.RoundTripHook(h.Observe).ProcessPipelineHook(next)
}

// Observe records one round trip.
func (h *RedisRoundTrips) Observe(calls []cache.Call) {
	var trip []string
	for _, c := range calls {
		switch c.Name {
		case "hello", "client":
			continue
		}
		s := c.Name
		if c.Key != "" {
			s += " " + c.Key
		}
		trip = append(trip, s)
	}
	if len(trip) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips = append(h.trips, trip)
}

// Take returns the round trips recorded since the last Take.
func (h *RedisRoundTrips) Take() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.trips
	h.trips = nil
	return t
}

// Matching counts the round trips in which some command contains every one of substrs
// (for example "hmget" and ":chunk:" for chunk reads, leaving out the fills).
func Matching(trips [][]string, substrs ...string) int {
	n := 0
	for _, trip := range trips {
		for _, c := range trip {
			if containsAll(c, substrs) {
				n++
				break
			}
		}
	}
	return n
}

func containsAll(s string, substrs []string) bool {
	for _, sub := range substrs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// All returns every count since the last Reset, by "<command> <collection>".
func (c *MongoCommands) All() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
