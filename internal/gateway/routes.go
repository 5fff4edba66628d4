package gateway

import (
	"io"
	"net/http"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/ops"
	"github.com/msggate/msggate/internal/playground"
)

// Handler returns the gateway's HTTP routes.
func (g *Gateway) Handler() http.Handler {
	read := g.readPath()
	loaders := g.Config.Loaders
	if own := loaders.ObserveBatch; own != nil {
		loaders.ObserveBatch = func(loader string, keys int) { own(loader, keys); g.Metrics.ObserveBatch(loader, keys) }
	} else {
		loaders.ObserveBatch = g.Metrics.ObserveBatch
	}
	opts := graph.HandlerOptions{
		JWTSecret:     g.Secret,
		Authenticator: read.authenticator,
		TokenHeader:   read.tokenHeader,
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

		AnonymousRateLimit:              g.Config.AnonymousRateLimit,
		AnonymousRateBurst:              g.Config.AnonymousRateBurst,
		MaxConnectionsPerUser:           g.Config.MaxConnectionsPerUser,
		MaxPendingConnectionsPerAddress: g.Config.MaxPendingConnectionsPerAddress,
		ClientIPHeader:                  g.Config.ClientIPHeader,
		ConnectionRate:                  g.Config.ConnectionRate,
		ConnectionBurst:                 g.Config.ConnectionBurst,
	}
	if g.Store != nil {
		opts.StoreAdmission = g.StoreAdmission
		opts.StoreRequests = g.StoreRequests
	}
	opts.CacheAdmission = g.CacheAdmission
	mux := http.NewServeMux()
	mux.Handle("/query", graph.NewHandler(read.resolver, opts))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", ops.ReadinessHandler(g.Logger, ops.DefaultReadinessTimeout, read.checks...))
	mux.Handle("GET /metrics", g.Metrics.Handler())
	if g.Config.Playground {
		graphiql := playground.New(playground.Options{Endpoint: "/query", Token: g.PlaygroundToken})
		mux.Handle("GET /{$}", graphiql)
		mux.Handle("GET "+playground.AssetsPath, graphiql)
	} else {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if g.OpenIM != nil {
				_, _ = io.WriteString(w, "msggate (OpenIM mode, read-only): POST GraphQL to /query with your OpenIM token, \"Authorization: Bearer <token>\" or \"token: <token>\".\n")
				return
			}
			_, _ = io.WriteString(w, "msggate: POST GraphQL to /query with \"Authorization: Bearer <token>\".\n"+
				"Get a token with: go run . token -user alice\n")
		})
	}
	return ops.LogRequests(g.Logger, mux)
}
