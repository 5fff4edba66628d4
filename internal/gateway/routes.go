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
	// The settings are Config.Handler's; the dependencies are what the gateway opened.
	deps := server.Dependencies{
		JWTSecret:        g.Secret,
		Authenticator:    read.authenticator,
		TokenHeader:      read.tokenHeader,
		Logger:           g.Logger,
		Metrics:          g.Metrics,
		ObserveBatch:     g.Metrics.ObserveBatch,
		RateLimiter:      g.Cache,
		PersistedQueries: g.Cache.PersistedQueries(cache.DefaultPersistedQueryTTL),
		CacheAdmission:   g.CacheAdmission,
		TracerProvider:   g.Config.TracerProvider,
	}
	if g.Store != nil {
		deps.StoreAdmission = g.StoreAdmission
		deps.StoreRequests = g.StoreRequests
	}
	mux := http.NewServeMux()
	mux.Handle("/query", server.NewHandler(read.resolver, g.Config.Handler, deps))
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
	// The access log starts each request's span: the log line names the trace, and the span
	// the request ID.
	return ops.LogTracedRequests(g.Logger, tracing.RequestSpans(g.Config.TracerProvider), mux)
}
