package openim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// deployment is an OpenIM deployment written by openimtest on FerretDB and a real
// redis-server, and msggate's Store over it on connections of its own, watched: every MongoDB
// command and Redis round trip the Store makes is counted.
type deployment struct {
	*openimtest.Deployment
	t       *testing.T
	mongo   *testenv.MongoDB
	redis   *testenv.RedisServer
	cmds    *testenv.MongoCommands
	trips   *testenv.RedisRoundTrips
	storeDB func() *openim.Store
}

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	m := testenv.Mongo(t)
	rs := testenv.Redis(t)
	fixtureRedis := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = fixtureRedis.Close() })
	d := &deployment{
		Deployment: openimtest.New(t, m.Connect(t, nil), fixtureRedis),
		t:          t, mongo: m, redis: rs,
		cmds: &testenv.MongoCommands{}, trips: &testenv.RedisRoundTrips{},
	}
	return d
}

// open opens msggate's Store over the deployment, then forgets the commands Open made.
func (d *deployment) open(opts openim.Options) *openim.Store {
	d.t.Helper()
	db := d.mongo.Connect(d.t, d.cmds.Monitor())
	rdb := redis.NewClient(&redis.Options{Addr: d.redis.Addr()})
	rdb.AddHook(d.trips)
	d.t.Cleanup(func() { _ = rdb.Close() })
	s, err := openim.Open(context.Background(), db, rdb, opts)
	if err != nil {
		d.t.Fatalf("Open: %v", err)
	}
	d.cmds.Reset()
	d.trips.Take()
	return s
}

// count returns the MongoDB commands on coll and the Redis round trips since the last count.
func (d *deployment) count(coll string) (finds int, trips int) {
	finds = d.cmds.Count(coll, "find", "aggregate")
	trips = len(d.trips.Take())
	d.cmds.Reset()
	return finds, trips
}

func mustNoDiff(t *testing.T, before, after openimtest.Snapshot) {
	t.Helper()
	if diff := openimtest.Diff(before, after); len(diff) > 0 {
		t.Fatalf("the deployment changed:\n%s", strings.Join(diff, "\n"))
	}
}

var ctx = context.Background()
