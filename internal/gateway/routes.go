package gateway

import (
	"io"
	"net/http"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/ops"
	"github.com/msggate/msggate/internal/playground"
)

// Handler returns the gateway's HTTP routes.
func (g *Gateway) Handler() http.Handler {
	chunks := history.NewCachedChunks(g.Store, g.Cache, g.Logger)
	chunks.ObserveCache = g.Metrics.ObserveChunkCache
	loaders := g.Config.Loaders
	if own := loaders.ObserveBatch; own != nil {
		loaders.ObserveBatch = func(loader string, keys int) { own(loader, keys); g.Metrics.ObserveBatch(loader, keys) }
	} else {
		loaders.ObserveBatch = g.Metrics.ObserveBatch
	}
	resolver := &graph.Resolver{
		Ledger:   g.Ledger,
		Chunks:   chunks,
		Ingester: g.Ingest,
		Hub:      g.Hub,
		Logger:   g.Logger,
	}
	mux := http.NewServeMux()
	mux.Handle("/query", graph.NewHandler(resolver, graph.HandlerOptions{
		JWTSecret:     g.Secret,
		Introspection: g.Config.Introspection,
		Loaders:       loaders,
		Logger:        g.Logger,
		Metrics:       g.Metrics,

		MaxBodyBytes:     g.Config.MaxBodyBytes,
		MaxTokens:        g.Config.MaxTokens,
		MaxDepth:         g.Config.MaxDepth,
		MaxAliases:       g.Config.MaxAliases,
		MaxComplexity:    g.Config.MaxComplexity,
		RateLimiter:      g.Cache,
		RateLimit:        g.Config.RateLimit,
		RateBurst:        g.Config.RateBurst,
		RequestTimeout:   g.Config.RequestTimeout,
		KeepAlive:        g.Config.KeepAlive,
		PersistedQueries: g.Cache.PersistedQueries(cache.DefaultPersistedQueryTTL),
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", ops.ReadinessHandler(g.Logger, ops.DefaultReadinessTimeout,
		ops.Check{Name: "mongodb", Ping: g.Store.Ping},
		ops.Check{Name: "redis", Ping: g.Cache.Ping},
	))
	mux.Handle("GET /metrics", g.Metrics.Handler())
	if g.Config.Playground {
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
	return ops.LogRequests(g.Logger, mux)
}
