// Command msggate is a GraphQL gateway for instant-messaging history stored in MongoDB as
// seq-addressed chunks of 100 messages, with Redis in front. This file is the only place where
// the parts are wired together.
//
//	msggate [serve] [flags]     run the gateway (the default)
//	msggate token -user U       print a bearer token for user U
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	imsync "github.com/msggate/msggate/internal/sync"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	}
	return fmt.Errorf("unknown command %q (commands: serve, token)", cmd)
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
	LogOutput     io.Writer // where embedded servers log warnings; default os.Stderr

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
	Logger  *slog.Logger
	closers []func() error
	server  *http.Server
}

// Open connects to (or starts) MongoDB and Redis and wires every part, without serving.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (m *Main, err error) {
	if cfg.LogOutput == nil {
		cfg.LogOutput = os.Stderr
	}
	m = &Main{Config: cfg, Logger: logger}
	defer func() {
		if err != nil {
			_ = m.Close()
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
	if cfg.MongoMonitor != nil {
		mopts.SetMonitor(cfg.MongoMonitor)
	}
	client, err := mongo.Connect(mopts)
	if err != nil {
		return nil, fmt.Errorf("connect to MongoDB: %w", err)
	}
	m.closers = append(m.closers, func() error { return client.Disconnect(context.Background()) })
	if m.Store, err = chunkstore.Open(ctx, client.Database(cfg.MongoDatabase)); err != nil {
		return nil, err
	}

	redisURL := cfg.RedisURL
	if redisURL == "" {
		url, stop, err := embedded.StartRedis()
		if err != nil {
			return nil, err
		}
		m.closers = append(m.closers, func() error { stop(); return nil })
		redisURL = url
	}
	ropts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	// Redis is a cache in front of MongoDB: when it is down, reads should fall through to
	// MongoDB quickly rather than wait out go-redis's default retries (seconds per call).
	if ropts.MaxRetries == 0 {
		ropts.MaxRetries = 1
	}
	if ropts.MaxRetryBackoff == 0 {
		ropts.MaxRetryBackoff = 100 * time.Millisecond
	}
	if ropts.DialTimeout == 0 {
		ropts.DialTimeout = 2 * time.Second
	}
	if ropts.DialerRetries == 0 {
		ropts.DialerRetries = 1
	}
	rdb := redis.NewClient(ropts)
	if cfg.RedisHook != nil {
		rdb.AddHook(cfg.RedisHook)
	}
	m.closers = append(m.closers, rdb.Close)
	m.Cache = cache.New(rdb, cache.Options{})
	m.Ledger = imsync.NewLedger(m.Store, m.Cache, imsync.Options{Logger: logger})
	m.Ingest = ingest.New(m.Store, m.Cache, m.Ledger, ingest.Options{})
	return m, nil
}

// Handler returns the gateway's HTTP routes.
func (m *Main) Handler() http.Handler {
	resolver := &graph.Resolver{
		Ledger:   m.Ledger,
		Reader:   history.NewReader(m.Store, m.Cache, m.Logger),
		Ingester: m.Ingest,
		Logger:   m.Logger,
	}
	mux := http.NewServeMux()
	mux.Handle("/query", graph.NewHandler(resolver, graph.HandlerOptions{
		JWTSecret:     m.Secret,
		Introspection: m.Config.Introspection,
		Loaders:       m.Config.Loaders,
		Logger:        m.Logger,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "msggate: POST GraphQL to /query with \"Authorization: Bearer <token>\".\n"+
			"Get a token with: go run . token -user alice\n")
	})
	return mux
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return m.server.Shutdown(shutdownCtx)
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
	return m.Serve(ctx, func(addr string) {
		host := addr
		if h, p, err := net.SplitHostPort(addr); err == nil && (h == "" || h == "::" || h == "0.0.0.0") {
			host = "localhost:" + p
		}
		fmt.Fprintf(stdout, "msggate is listening on http://%s/query\n", host)
		tokenCmd := "go run . token -user alice"
		if cfg.DataDir != "./data" && cfg.JWTSecret == "" && os.Getenv("MSGGATE_JWT_SECRET") == "" {
			tokenCmd += " -data-dir " + cfg.DataDir
		}
		fmt.Fprintf(stdout, "get a token:  TOKEN=$(%s)\n", tokenCmd)
		fmt.Fprintf(stdout, "then:         curl -s http://%s/query -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' \\\n", host)
		fmt.Fprintf(stdout, "                -d '{\"query\":\"mutation{sendMessage(input:{recvID:\\\"bob\\\",contentType:101,content:\\\"hi\\\"}){conversationID seq}}\"}'\n")
	})
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
