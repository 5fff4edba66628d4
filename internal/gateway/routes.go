package gateway

import (
	"io"
	"net/http"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/ops"
	"github.com/msggate/msggate/internal/playground"
	"github.com/msggate/msggate/internal/server"
	"github.com/msggate/msggate/internal/tracing"
)

// Handler returns the gateway's HTTP routes.
func (g *Gateway) Handler() http.Handler {
	read := g.readPath()
	loaders := g.Config.Handler.Loaders
	if own := loaders.ObserveBatch; own != nil {
		loaders.ObserveBatch = func(loader string, keys int) { own(loader, keys); g.Metrics.ObserveBatch(loader, keys) }
	} else {
		loaders.ObserveBatch = g.Metrics.ObserveBatch
	}
	// The settings come from Config.Handler; what the gateway opened, it sets itself.
	opts := g.Config.Handler
	opts.Loaders = loaders
	opts.JWTSecret = g.Secret
	opts.Authenticator = read.authenticator
	opts.TokenHeader = read.tokenHeader
	opts.Logger = g.Logger
	opts.Metrics = g.Metrics
	opts.RateLimiter = g.Cache
	opts.PersistedQueries = g.Cache.PersistedQueries(cache.DefaultPersistedQueryTTL)
	opts.StoreAdmission, opts.StoreRequests = nil, nil
	if g.Store != nil {
		opts.StoreAdmission = g.StoreAdmission
		opts.StoreRequests = g.StoreRequests
	}
	opts.CacheAdmission = g.CacheAdmission
	opts.TracerProvider = g.Config.TracerProvider
	mux := http.NewServeMux()
	mux.Handle("/query", server.NewHandler(read.resolver, opts))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", ops.ReadinessHandler(g.Logger, ops.DefaultReadinessTimeout, read.checks...))
	if g.Config.MetricsAddr == "" {
		mux.Handle("GET /metrics", g.Metrics.Handler())
	}
	if g.Config.Playground {
		graphiql := playground.New(playground.Options{Endpoint: "/query"})
		mux.Handle("GET "+playground.AssetsPath, graphiql)
		if g.PlaygroundToken == nil {
			mux.Handle("GET /{$}", graphiql)
		} else {
			// The demo token is for the developer at this machine: whoever else reaches the
			// gateway gets the page without it.
			withToken := playground.New(playground.Options{Endpoint: "/query", Token: g.PlaygroundToken})
			header := g.Config.Handler.ClientIPHeader
			mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
				if server.LoopbackClient(r, header) {
					withToken.ServeHTTP(w, r)
					return
				}
				graphiql.ServeHTTP(w, r)
			})
		}
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
	// The trace's span outside the access log: the log line names the trace, and the span
	// the request ID.
	return tracing.Handler(g.Config.TracerProvider, ops.LogRequests(g.Logger, mux))
}
