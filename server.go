// Command msggate is a GraphQL gateway for instant-messaging history stored in MongoDB as
// seq-addressed chunks of 100 messages, with Redis in front. This file is the only place where
// the parts are wired together.
//
//	msggate [serve] [flags]     run the gateway (the default)
//	msggate token -user U       print a bearer token for user U
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/embedded"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/ops"
	"github.com/msggate/msggate/internal/playground"
	imsync "github.com/msggate/msggate/internal/sync"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful shutdown; a second one then kills at once.
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "msggate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, stdout, stderr)
	case "token":
		return token(args, stdout)
	case "group":
		return groupCommand(ctx, args, stdout, stderr)
	case "seed":
		return seedCommand(ctx, args, stdout, stderr)
	case "import":
		return importCommand(ctx, args, stdout, stderr)
	case "retention":
		return retentionCommand(ctx, args, stdout, stderr)
	case "sync-client":
		return syncClientCommand(ctx, args, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q (commands: serve, token, group, seed, import, retention, sync-client)", cmd)
}

// Config is everything msggate needs to start. Each field has a flag and an environment
// variable; the flag wins.
type Config struct {
	Addr          string // MSGGATE_ADDR, default ":8080"
	DataDir       string // MSGGATE_DATA_DIR, default "./data": embedded store and generated secret
	MongoURI      string // MSGGATE_MONGO_URI; empty: FerretDB in-process on SQLite under DataDir
	MongoDatabase string // MSGGATE_MONGO_DATABASE, default "msggate"
	RedisURL      string // MSGGATE_REDIS_URL; empty: an in-process Redis-compatible server
	JWTSecret     string // MSGGATE_JWT_SECRET; empty: generated once and kept in DataDir
	Introspection bool
	Playground    bool      // serve GraphiQL at /
	LogOutput     io.Writer // where embedded servers log warnings; default os.Stderr

	// Request limits (graph.HandlerOptions): zero takes the default, negative switches off.
	MaxBodyBytes   int64         // default 1 MiB
	MaxTokens      int           // parser tokens of a query; default 15000
	MaxDepth       int           // nesting of fields, introspection aside; default 12
	MaxAliases     int           // default 30
	MaxComplexity  int           // default 5000
	RateLimit      float64       // requests a second per user, sustained; default 20
	RateBurst      int           // requests per user at once; default 40
	RequestTimeout time.Duration // default 30s

	// Sync: the per-user event log and live subscriptions.
	EventLogMaxLen int64         // events kept per user; default 10000
	EventLogMaxAge time.Duration // how long an event is kept; default 7 days
	KeepAlive      time.Duration // WebSocket keepalive ping interval; default 15s

	// Retention deletes whole chunks older than a number of days (off by default).
	Retention RetentionConfig

	// For tests: observe MongoDB commands and Redis calls.
	MongoMonitor *event.CommandMonitor
	RedisHook    redis.Hook
	Loaders      graph.LoaderOptions
}

func (c *Config) flags(fs *flag.FlagSet) {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return def
	}
	fs.StringVar(&c.Addr, "addr", env("MSGGATE_ADDR", ":8080"), "listen address (MSGGATE_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", env("MSGGATE_DATA_DIR", "./data"), "data directory for the embedded default (MSGGATE_DATA_DIR)")
	fs.StringVar(&c.MongoURI, "mongo-uri", env("MSGGATE_MONGO_URI", ""), "MongoDB URI; empty runs FerretDB in-process (MSGGATE_MONGO_URI)")
	fs.StringVar(&c.MongoDatabase, "mongo-db", env("MSGGATE_MONGO_DATABASE", "msggate"), "MongoDB database (MSGGATE_MONGO_DATABASE)")
	fs.StringVar(&c.RedisURL, "redis-url", env("MSGGATE_REDIS_URL", ""), "Redis URL; empty runs an in-process Redis (MSGGATE_REDIS_URL)")
	fs.BoolVar(&c.Introspection, "introspection", true, "allow GraphQL schema introspection")
	fs.BoolVar(&c.Playground, "playground", true, "serve GraphiQL at /")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", graph.DefaultMaxBodyBytes, "largest request body; negative: no limit")
	fs.IntVar(&c.MaxTokens, "max-tokens", graph.DefaultMaxTokens, "most tokens in a query; negative: no limit")
	fs.IntVar(&c.MaxDepth, "max-depth", graph.DefaultMaxDepth, "deepest nesting of fields in a query, introspection aside; negative: no limit")
	fs.IntVar(&c.MaxAliases, "max-aliases", graph.DefaultMaxAliases, "most aliases in a query; negative: no limit")
	fs.IntVar(&c.MaxComplexity, "max-complexity", graph.DefaultMaxComplexity, "highest cost of a query, about the objects it may resolve; negative: no limit")
	fs.Float64Var(&c.RateLimit, "rate-limit", graph.DefaultRateLimit, "requests a second each user may make, sustained; negative: no rate limit")
	fs.IntVar(&c.RateBurst, "rate-burst", graph.DefaultRateBurst, "requests each user may make at once")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", graph.DefaultRequestTimeout, "longest time a request may take; negative: no limit")
	fs.Int64Var(&c.EventLogMaxLen, "event-log-len", 10000, "events kept in each user's sync log; an older sync token answers tooLong")
	fs.DurationVar(&c.EventLogMaxAge, "event-log-age", 7*24*time.Hour, "how long events stay in the sync log")
	fs.DurationVar(&c.KeepAlive, "ws-keepalive", 15*time.Second, "WebSocket keepalive ping interval")
	c.Retention.flags(fs)
}

// Main is a running gateway: its stores, its HTTP server, and what must be closed.
type Main struct {
	Config  Config
	Secret  []byte
	Addr    string // the address actually listened on
	Store   *chunkstore.Store
	Cache   *cache.Cache
	Ledger  *imsync.Ledger
	Ingest  *ingest.Ingester
	Hub     *imsync.Hub
	Logger  *slog.Logger
	Metrics *ops.Metrics // this gateway's own Prometheus registry, served on /metrics
	closers []func() error
	server  *http.Server
}

// Open connects to (or starts) MongoDB and Redis and wires every part, without serving.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (m *Main, err error) {
	if cfg.LogOutput == nil {
		cfg.LogOutput = os.Stderr
	}
	// Every line logged with a request's context carries its request_id.
	logger = ops.WithRequestIDs(logger)
	opened := &Main{Config: cfg, Logger: logger, Metrics: ops.NewMetrics()}
	m = opened
	defer func() {
		// Each error return sets m to nil; what was opened so far is closed through opened.
		if err != nil {
			_ = opened.Close()
		}
	}()
	if m.Secret, err = jwtSecret(cfg); err != nil {
		return nil, err
	}
	mongoURI := cfg.MongoURI
	if mongoURI == "" {
		uri, stop, err := embedded.StartFerretDB(ctx, cfg.DataDir, quiet(cfg.LogOutput))
		if err != nil {
			return nil, err
		}
		m.closers = append(m.closers, stop)
		mongoURI = uri
	}
	mopts := options.Client().ApplyURI(mongoURI).SetTimeout(10 * time.Second)
	mopts.SetMonitor(chunkstore.TimingMonitor(cfg.MongoMonitor, m.Metrics.ObserveMongoCommand))
	client, err := mongo.Connect(mopts)
	if err != nil {
		return nil, fmt.Errorf("connect to MongoDB: %w", err)
	}
	m.closers = append(m.closers, func() error { return client.Disconnect(context.Background()) })
	if m.Store, err = chunkstore.Open(ctx, client.Database(cfg.MongoDatabase)); err != nil {
		return nil, err
	}

	if cfg.RedisURL == "" {
		url, stop, err := embedded.StartRedis()
		if err != nil {
			return nil, err
		}
		m.closers = append(m.closers, func() error { stop(); return nil })
		cfg.RedisURL = url
	}
	rdb, err := newRedisClient(cfg)
	if err != nil {
		return nil, err
	}
	rdb.AddHook(cache.TimingHook(m.Metrics.ObserveRedisCall))
	m.closers = append(m.closers, rdb.Close)
	m.Cache = cache.New(rdb, cache.Options{EventLogMaxLen: cfg.EventLogMaxLen, EventLogMaxAge: cfg.EventLogMaxAge})
	m.Ledger = imsync.NewLedger(m.Store, m.Cache, imsync.Options{Logger: logger})
	m.Ingest = ingest.New(m.Store, m.Cache, m.Ledger, ingest.Options{})
	m.Hub = imsync.NewHub(m.Ledger, m.Cache, imsync.HubOptions{OnDrop: m.Metrics.CountDroppedSubscriber})
	m.Metrics.WatchSubscribers(m.Hub.Subscribers)
	m.closers = append(m.closers, m.Hub.Close)
	return m, nil
}

// Handler returns the gateway's HTTP routes.
func (m *Main) Handler() http.Handler {
	chunks := history.NewCachedChunks(m.Store, m.Cache, m.Logger)
	chunks.ObserveCache = m.Metrics.ObserveChunkCache
	loaders := m.Config.Loaders
	if own := loaders.ObserveBatch; own != nil {
		loaders.ObserveBatch = func(loader string, keys int) { own(loader, keys); m.Metrics.ObserveBatch(loader, keys) }
	} else {
		loaders.ObserveBatch = m.Metrics.ObserveBatch
	}
	resolver := &graph.Resolver{
		Ledger:   m.Ledger,
		Chunks:   chunks,
		Ingester: m.Ingest,
		Hub:      m.Hub,
		Logger:   m.Logger,
	}
	mux := http.NewServeMux()
	mux.Handle("/query", graph.NewHandler(resolver, graph.HandlerOptions{
		JWTSecret:     m.Secret,
		Introspection: m.Config.Introspection,
		Loaders:       loaders,
		Logger:        m.Logger,
		Extensions:    []graphql.HandlerExtension{m.Metrics.GraphQL()},

		MaxBodyBytes:     m.Config.MaxBodyBytes,
		MaxTokens:        m.Config.MaxTokens,
		MaxDepth:         m.Config.MaxDepth,
		MaxAliases:       m.Config.MaxAliases,
		MaxComplexity:    m.Config.MaxComplexity,
		RateLimiter:      m.Cache,
		RateLimit:        m.Config.RateLimit,
		RateBurst:        m.Config.RateBurst,
		RequestTimeout:   m.Config.RequestTimeout,
		KeepAlive:        m.Config.KeepAlive,
		PersistedQueries: m.Cache.PersistedQueries(24 * time.Hour),
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", ops.ReadinessHandler(m.Logger, ops.DefaultReadinessTimeout,
		ops.Check{Name: "mongodb", Ping: m.Store.Ping},
		ops.Check{Name: "redis", Ping: m.Cache.Ping},
	))
	mux.Handle("GET /metrics", m.Metrics.Handler())
	if m.Config.Playground {
		graphiql := playground.New(playground.Options{Endpoint: "/query"})
		mux.Handle("GET /{$}", graphiql)
		mux.Handle("GET "+playground.AssetsPath, graphiql)
	} else {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "msggate: POST GraphQL to /query with \"Authorization: Bearer <token>\".\n"+
				"Get a token with: go run . token -user alice\n")
		})
	}
	return ops.LogRequests(m.Logger, mux)
}

// Serve listens on the configured address and serves until ctx ends, then drains in-flight
// requests.
func (m *Main) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", m.Config.Addr)
	if err != nil {
		return err
	}
	m.Addr = ln.Addr().String()
	m.server = &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	if ready != nil {
		ready(m.Addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.server.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Shutdown closes the listener at once, then waits for in-flight requests, whose contexts
	// do not end with ctx (BaseContext), so they finish normally. It does not track hijacked
	// connections: subscriptions are ended here, and each closes its WebSocket with "going
	// away", so its client reconnects to another instance with its last token.
	// The grace period outlasts the request time limit, so that a request that just started
	// can still finish.
	grace := 15 * time.Second
	if limit := cmp.Or(m.Config.RequestTimeout, graph.DefaultRequestTimeout); limit > 0 && limit+time.Second > grace {
		grace = limit + time.Second
	}
	m.Logger.Info("shutting down: draining in-flight requests", "grace", grace.String())
	if m.Hub != nil {
		m.Hub.EndAll(imsync.ErrShuttingDown)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := m.server.Shutdown(shutdownCtx); err != nil {
		// Past the grace period the stragglers are cut off, so that the process exits.
		_ = m.server.Close()
		return fmt.Errorf("shutdown: requests still running after %s were cut off: %w", grace, err)
	}
	m.Logger.Info("shut down: every request answered")
	return nil
}

// Close releases every connection and embedded server, newest first.
func (m *Main) Close() error {
	var errs []error
	for i := len(m.closers) - 1; i >= 0; i-- {
		errs = append(errs, m.closers[i]())
	}
	m.closers = nil
	return errors.Join(errs...)
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := Config{LogOutput: stderr}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.MongoURI == "" {
		fmt.Fprintf(stdout, "starting the embedded store under %s (first start builds its SQLite files)...\n", cfg.DataDir)
	}
	m, err := Open(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer m.Close()
	// Deferred after Close, so the job stops before the stores close.
	waitRetention, err := startRetention(ctx, m, cfg.Retention, logger)
	if err != nil {
		return err
	}
	defer waitRetention()
	if cfg.MongoURI == "" {
		// A new embedded installation starts with the demo data, so there is something to query.
		if empty, err := m.Store.Empty(ctx); err != nil {
			return err
		} else if empty {
			fmt.Fprintln(stdout, "new store: adding the demo data set (go run . seed does the same)")
			if err := seedDemo(ctx, m, io.Discard); err != nil {
				return err
			}
		}
	}
	return m.Serve(ctx, func(addr string) { printStartup(stdout, cfg, m, addr) })
}

// printStartup tells a new user where the gateway listens and how to make a first request.
func printStartup(w io.Writer, cfg Config, m *Main, addr string) {
	host := addr
	if h, p, err := net.SplitHostPort(addr); err == nil && (h == "" || h == "::" || h == "0.0.0.0") {
		host = "localhost:" + p
	}
	fmt.Fprintf(w, "msggate is listening on http://%s/query\n", host)
	if cfg.Playground {
		fmt.Fprintf(w, "GraphiQL:     http://%s/\n", host)
	}
	if demo, err := auth.Issue(m.Secret, demoUser, false, 24*time.Hour, time.Now()); err == nil {
		fmt.Fprintf(w, "demo token for %s (24h): %s\n", demoUser, demo)
	}
	tokenCmd := "go run . token -user alice"
	if cfg.DataDir != "./data" && cfg.JWTSecret == "" && os.Getenv("MSGGATE_JWT_SECRET") == "" {
		tokenCmd += " -data-dir " + cfg.DataDir
	}
	body, _ := json.Marshal(map[string]string{"query": demoQuery})
	fmt.Fprintf(w, "more tokens:  %s\n", tokenCmd)
	fmt.Fprintf(w, "example:      curl -s http://%s/query -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' -d '%s'\n", host, body)
}

func token(args []string, stdout io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	cfg.flags(fs)
	user := fs.String("user", "", "user ID the token is for (required)")
	admin := fs.Bool("admin", false, "give the token the admin role")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" {
		return errors.New("token: -user is required")
	}
	secret, err := jwtSecret(cfg)
	if err != nil {
		return err
	}
	t, err := auth.Issue(secret, *user, *admin, *ttl, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t)
	return nil
}

// jwtSecret returns the configured secret or, on the embedded default, the one kept in the
// data directory (generated on first use), so that tokens survive restarts.
func jwtSecret(cfg Config) ([]byte, error) {
	if cfg.JWTSecret == "" {
		cfg.JWTSecret = os.Getenv("MSGGATE_JWT_SECRET")
	}
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	path := filepath.Join(cfg.DataDir, "jwt-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("keep the generated JWT secret: %w", err)
	}
	return []byte(secret), nil
}

// quiet returns a logger for embedded servers: warnings and errors only.
func quiet(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
