package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/embedded"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/search/reindex"
	"github.com/msggate/msggate/internal/tracing"
)

// Serve: msggate [serve] [flags]
// It runs the gateway until ctx ends. A new embedded installation starts with the demo data.
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg gateway.Config // the embedded store logs to its file in the data dir, not to stderr
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	applyGCPercent(os.Getenv)
	// Off unless -otlp-endpoint or the standard OTEL_ variables ask for it; then every
	// component of the gateway is given the provider, and the spans still buffered are sent
	// when the gateway has stopped.
	traces, err := tracing.Start(ctx, tracing.Options{Endpoint: cfg.OTLPEndpoint})
	if err != nil {
		return err
	}
	if traces != nil {
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
			defer cancel()
			if err := traces.Shutdown(flushCtx); err != nil {
				logger.Warn("sending the last traces failed", "err", err)
			}
		}()
		cfg.TracerProvider = traces.Provider()
		logger.Info("tracing on: spans go over OTLP/HTTP", "endpoint", traces.Endpoint())
	}
	if cfg.MongoURI == "" {
		fmt.Fprintf(stdout, "starting the embedded store under %s (first start builds its SQLite files; its log: %s)...\n",
			cfg.DataDir, filepath.Join(cfg.DataDir, embedded.LogFileName))
	}
	m, err := gateway.Open(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer m.Close()
	// Deferred after Close, so the job stops before the stores close.
	waitRetention, err := m.StartRetention(ctx, logger)
	if err != nil {
		return err
	}
	defer waitRetention()
	if m.OpenIM != nil {
		if m.SearchIsNew {
			// OpenIM's history before this index existed; the feed indexes what comes from now on.
			go indexExisting(ctx, m, m.OpenIM, logger)
		}
	} else if cfg.MongoURI == "" || m.SearchIsNew {
		// A new embedded installation starts with the demo data, so there is something to query.
		empty, err := m.Store.Empty(ctx)
		if err != nil {
			return err
		}
		if !empty && m.SearchIsNew {
			go indexExisting(ctx, m, m.Store, logger)
		}
		if empty && cfg.MongoURI == "" {
			if err := storesChecked(ctx, m); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "new store: adding the demo data set (go run . seed does the same)")
			if err := seedDemo(ctx, m, io.Discard); err != nil {
				return err
			}
		}
	}
	demo := &demoToken{secret: m.Secret}
	if cfg.MongoURI == "" && !cfg.OpenIM.Enabled {
		// The embedded store is this server's own, with the demo data it added: GraphiQL opens
		// with the demo user's token, as printed below. A real store's users get no token.
		m.PlaygroundToken = demo.get
	}
	// m.Config, with the defaults that depend on the store filled in.
	return m.Serve(ctx, func(addr string) { printStartup(stdout, m.Config, demo, addr, m.MetricsAddr) })
}

// traceFlushTimeout bounds the wait for the collector to take the last spans at shutdown.
const traceFlushTimeout = 5 * time.Second

// localURLHost is the host:port of a URL that reaches a gateway listening on addr from this
// machine: an address on every interface is reached through localhost.
func localURLHost(addr string) string {
	if h, p, err := net.SplitHostPort(addr); err == nil && (h == "" || h == "::" || h == "0.0.0.0") {
		return "localhost:" + p
	}
	return addr
}

// demoToken hands out the demo user's token: the same one until half its lifetime has passed,
// so that GraphiQL opens with the token the start-up lines print, and a gateway that runs for
// days still fills in one that works.
type demoToken struct {
	secret []byte

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// get returns the current demo token, or "" if none can be signed.
func (d *demoToken) get() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := time.Now(); d.token == "" || !now.Before(d.renewAt) {
		t, err := auth.Issue(d.secret, DemoUser, false, tokenTTL, now)
		if err != nil {
			return ""
		}
		d.token, d.renewAt = t, now.Add(tokenTTL/2)
	}
	return d.token
}

// printStartup tells a new user where the gateway listens and how to make a first request.
func printStartup(w io.Writer, cfg gateway.Config, demo *demoToken, addr, metricsAddr string) {
	host := localURLHost(addr)
	fmt.Fprintf(w, "msggate is listening on http://%s/query\n", host)
	if cfg.Playground {
		fmt.Fprintf(w, "GraphiQL:     http://%s/\n", host)
	}
	if metricsAddr != "" {
		fmt.Fprintf(w, "metrics:      http://%s/metrics\n", localURLHost(metricsAddr))
	}
	if cfg.OpenIM.Enabled {
		fmt.Fprintf(w, "OpenIM mode:  serving database %s read-only; send an OpenIM access token as \"Authorization: Bearer <token>\" or \"token: <token>\"\n", cfg.MongoDatabase)
		return
	}
	if token := demo.get(); token != "" {
		fmt.Fprintf(w, "demo token for %s (24h): %s\n", DemoUser, token)
	}
	tokenCmd := "go run . token -user alice"
	if cfg.DataDir != gateway.DefaultDataDir && cfg.JWTSecret == "" {
		tokenCmd += " -data-dir " + cfg.DataDir
	}
	body, _ := json.Marshal(map[string]string{"query": DemoQuery})
	fmt.Fprintf(w, "more tokens:  %s\n", tokenCmd)
	fmt.Fprintf(w, "example:      curl -s http://%s/query -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' -d '%s'\n", host, body)
}

// indexExisting indexes, in the background, a store that held messages before its search
// index existed (a data directory from before search, or a new index over a shared store):
// the gateway serves meanwhile, and search finds more as the run goes. `msggate reindex` does
// the same in the foreground.
func indexExisting(ctx context.Context, m *gateway.Gateway, st reindex.Store, logger *slog.Logger) {
	logger.InfoContext(ctx, "search: indexing the messages stored before the index existed")
	sum, err := reindex.Run(ctx, st, m.Search, reindex.Options{})
	if err != nil && ctx.Err() == nil {
		logger.ErrorContext(ctx, "search: indexing the stored messages failed; run msggate reindex", "err", err,
			"conversations", sum.Conversations)
		return
	}
	logger.InfoContext(ctx, "search: stored messages indexed", "conversations", sum.Conversations, "messages", sum.Messages,
		"elapsed", sum.Elapsed.Round(time.Millisecond).String())
}
