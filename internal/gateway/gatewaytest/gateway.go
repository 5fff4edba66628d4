package gatewaytest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/server"
)

// Secret is the JWT secret of the gateways Config configures.
const Secret = "test-secret-0123456789abcdef0123456789"

// Gateway is a msggate gateway under test, opened through gateway.Open as `go run .` opens
// it, on a real redis-server (or Redis Cluster) and FerretDB, and served over real HTTP; or,
// made by Client, only a client of a gateway served elsewhere (its *gateway.Gateway is nil).
type Gateway struct {
	*gateway.Gateway
	T     testing.TB
	URL   string               // the gateway's base URL: GraphQL is at URL+"/query"
	Redis *testenv.RedisServer // nil unless the harness started the redis-server
	// Mongo counts the MongoDB commands the gateway sent, RoundTrips its Redis round trips;
	// nil for a client.
	Mongo      *testenv.MongoCommands
	RoundTrips *testenv.RedisRoundTrips
	// Observers are the observers the gateway was opened with, the counters' included: a
	// second instance opened with them is counted alike.
	Observers gateway.Observers
}

// Start starts a gateway on its own redis-server and a fresh FerretDB database.
func Start(t testing.TB) *Gateway { return StartWith(t, nil) }

// StartWith starts a gateway like Start, with its configuration changed by tune first.
func StartWith(t testing.TB, tune func(*gateway.Config)) *Gateway {
	t.Helper()
	return StartObserved(t, gateway.Observers{}, tune)
}

// StartObserved starts a gateway like StartWith, with obs watching its MongoDB commands and
// Redis round trips besides the counters.
func StartObserved(t testing.TB, obs gateway.Observers, tune func(*gateway.Config)) *Gateway {
	t.Helper()
	rs := testenv.Redis(t)
	cfg := Config(rs.URL(), testenv.Mongo(t))
	if tune != nil {
		tune(&cfg)
	}
	g := NewObserved(t, cfg, obs)
	g.Redis = rs
	return g
}

// StartPair starts two gateway instances on one redis-server and one FerretDB database with
// one JWT secret, as two replicas of a deployment behind a load balancer, configured by tweak
// (nil: as is). Rate limits are off: the tests' clients are many devices of few users.
func StartPair(t testing.TB, tweak func(*gateway.Config)) [2]*Gateway {
	t.Helper()
	rs := testenv.Redis(t)
	cfg := Config(rs.URL(), testenv.Mongo(t))
	cfg.Handler.RateLimit = -1
	if tweak != nil {
		tweak(&cfg)
	}
	var out [2]*Gateway
	for i := range out {
		out[i] = New(t, cfg)
		out[i].Redis = rs
	}
	return out
}

// StartOnCluster starts a gateway on a Redis Cluster, given as a redis+cluster:// URL, and
// the FerretDB database mdb (several gateways may share one).
func StartOnCluster(t testing.TB, cluster *testenv.RedisClusterServer, mdb *testenv.MongoDB) *Gateway {
	t.Helper()
	return New(t, Config(cluster.URL(), mdb))
}

// Config is the configuration the tests run a gateway with, on their own servers.
func Config(redisURL string, mdb *testenv.MongoDB) gateway.Config {
	return gateway.Config{
		Addr:          "127.0.0.1:0",
		MongoURI:      mdb.URI(),
		MongoDatabase: mdb.Database(),
		RedisURL:      redisURL,
		JWTSecret:     Secret,
		Handler: server.Settings{
			Introspection: true,
			// Generous: under -race on a busy 2-core machine (the whole suite in parallel)
			// sibling resolvers can lag each other by more than the default wait, and a split
			// batch would show as an extra round trip in the tests that count them. A lone
			// resolver does not wait at all, so the tests pay this only where siblings batch.
			Loaders: graph.LoaderOptions{Wait: 20 * time.Millisecond},
			// Every client of a test comes from 127.0.0.1, so one address's bucket would hold
			// back a whole suite's requests without a valid token; the tests of that limit set
			// it.
			AnonymousRateLimit: -1,
		},
	}
}

// New opens a gateway on cfg, with fresh counters watching its MongoDB commands and Redis
// round trips, gives FerretDB the index on _id that msggate's embedded store has
// (testenv.IndexIDs), and serves it over HTTP until the test ends.
func New(t testing.TB, cfg gateway.Config) *Gateway {
	t.Helper()
	return NewObserved(t, cfg, gateway.Observers{})
}

// NewObserved is New with obs watching the gateway besides the counters.
func NewObserved(t testing.TB, cfg gateway.Config, obs gateway.Observers) *Gateway {
	t.Helper()
	g := &Gateway{T: t, Mongo: &testenv.MongoCommands{}, RoundTrips: &testenv.RedisRoundTrips{}}
	if watched := obs.OnMongoCommand; watched != nil {
		obs.OnMongoCommand = func(ctx context.Context, command, collection string) {
			g.Mongo.Observe(ctx, command, collection)
			watched(ctx, command, collection)
		}
	} else {
		obs.OnMongoCommand = g.Mongo.Observe
	}
	if watched := obs.OnRedisRoundTrip; watched != nil {
		obs.OnRedisRoundTrip = func(calls []cache.Call) {
			g.RoundTrips.Observe(calls)
			watched(calls)
		}
	} else {
		obs.OnRedisRoundTrip = g.RoundTrips.Observe
	}
	g.Observers = obs
	g.Gateway = OpenObserved(t, cfg, obs, Logger(t))
	testenv.IndexIDs(t, cfg.MongoURI, cfg.MongoDatabase) // as the embedded store's, now that its collections exist
	g.URL = Serve(t, g.Gateway)
	return g
}

// Open opens a gateway on cfg and closes it when the test ends.
func Open(t testing.TB, cfg gateway.Config, logger *slog.Logger) *gateway.Gateway {
	t.Helper()
	return OpenObserved(t, cfg, gateway.Observers{}, logger)
}

// OpenObserved is Open with obs watching the gateway.
func OpenObserved(t testing.TB, cfg gateway.Config, obs gateway.Observers, logger *slog.Logger) *gateway.Gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir() // the search index's
	}
	gw, err := gateway.OpenObserved(ctx, cfg, obs, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	if gw.Store != nil {
		// The gateway prepares its store in the background; tests start from a prepared one
		// (TestStartsWhileTheStoreIsDown does not).
		select {
		case <-gw.Store.Ready():
		case <-ctx.Done():
			t.Fatal("the gateway's store was not prepared within a minute")
		}
		// ... and from a Redis known to describe that store.
		select {
		case <-gw.StoreIdentity.Confirmed():
		case <-ctx.Done():
			t.Fatal("the gateway did not check Redis against its store within a minute")
		}
	}
	return gw
}

// Serve serves gw's handler over real HTTP until the test ends and returns its URL.
func Serve(t testing.TB, gw *gateway.Gateway) string {
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// Client returns a client of the gateway served at url.
func Client(t testing.TB, url string) *Gateway { return &Gateway{T: t, URL: url} }

// Token returns a bearer token for user, valid for an hour.
func (g *Gateway) Token(user string) string {
	g.T.Helper()
	tok, err := auth.Issue(g.Secret, user, false, time.Hour, time.Now())
	if err != nil {
		g.T.Fatal(err)
	}
	return tok
}

// Admin returns a bearer token of the admin "root".
func (g *Gateway) Admin() string {
	g.T.Helper()
	tok, err := auth.Issue(g.Secret, "root", true, time.Hour, time.Now())
	if err != nil {
		g.T.Fatal(err)
	}
	return tok
}

// Send ingests n chat messages from sender to recvID (or into groupID) through the Go ingest
// path, in one batch; their contents are m1, m2, ...
func (g *Gateway) Send(sender, recvID, groupID string, n int) {
	g.T.Helper()
	msgs := make([]*im.Message, n)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: sender, RecvID: recvID, GroupID: groupID, ContentType: 101, Content: fmt.Sprintf("m%d", i+1)}
	}
	if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
		g.T.Fatal(err)
	}
}

// Logger sends a gateway's logs to the test log, shown only when a test fails (or -v).
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StoreFlags are the flags that point a subcommand (internal/cli) at the gateway's stores,
// with a data directory of the test's own for the JWT secret the subcommand keeps there, so
// that no test writes into the source tree.
func (g *Gateway) StoreFlags() []string {
	return []string{"-mongo-uri", g.Config.MongoURI, "-mongo-db", g.Config.MongoDatabase, "-redis-url", g.Config.RedisURL,
		"-data-dir", g.T.TempDir()}
}
