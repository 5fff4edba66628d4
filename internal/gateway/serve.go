package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/msggate/msggate/internal/server"
	imsync "github.com/msggate/msggate/internal/sync"
)

// shutdownGrace is the least time Serve gives in-flight requests to finish once told to stop.
const shutdownGrace = 15 * time.Second

// Serve listens on the configured address (and /metrics on its own, when configured) and
// serves until ctx ends, then drains in-flight requests. ready, when not nil, is told the
// address listened on before the first request.
func (g *Gateway) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", g.Config.Addr)
	if err != nil {
		return err
	}
	g.Addr = ln.Addr().String()
	errc := make(chan error, 2)
	if g.Config.MetricsAddr != "" {
		metrics, err := g.serveMetrics(errc)
		if err != nil {
			_ = ln.Close()
			return err
		}
		// Closed last, so that a scrape still sees the drain.
		defer func() { _ = metrics.Close() }()
	}
	g.server = &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       serverTimeout(g.Config.ReadTimeout, DefaultReadTimeout),
		IdleTimeout:       serverTimeout(g.Config.IdleTimeout, DefaultIdleTimeout),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(g.Logger.Handler(), slog.LevelWarn),
	}
	if ready != nil {
		ready(g.Addr)
	}
	go func() { errc <- g.server.Serve(ln) }()
	select {
	case err := <-errc:
		_ = g.server.Close()
		return err
	case <-ctx.Done():
	}
	// Shutdown closes the listener at once, then waits for in-flight requests, whose contexts
	// do not end with ctx (BaseContext), so they finish normally. It does not track hijacked
	// connections: subscriptions are ended here, and each closes its WebSocket with "going
	// away", so its client reconnects to another instance with its last token.
	// The grace period outlasts the request time limit, so that a request that just started
	// can still finish.
	grace := shutdownGrace
	if limit := cmp.Or(g.Config.Handler.RequestTimeout, server.DefaultRequestTimeout); limit > 0 && limit+time.Second > grace {
		grace = limit + time.Second
	}
	g.Logger.Info("shutting down: draining in-flight requests", "grace", grace.String())
	if g.Hub != nil {
		g.Hub.EndAll(imsync.ErrShuttingDown)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := g.server.Shutdown(shutdownCtx); err != nil {
		// Past the grace period the stragglers are cut off, so that the process exits.
		_ = g.server.Close()
		return fmt.Errorf("shutdown: requests still running after %s were cut off: %w", grace, err)
	}
	g.Logger.Info("shut down: every request answered")
	return nil
}

// serveMetrics serves /metrics on Config.MetricsAddr, which operators can keep off the
// network clients reach; errc is told when it stops serving.
func (g *Gateway) serveMetrics(errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", g.Config.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	g.MetricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.Metrics.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       serverTimeout(g.Config.ReadTimeout, DefaultReadTimeout),
		IdleTimeout:       serverTimeout(g.Config.IdleTimeout, DefaultIdleTimeout),
		ErrorLog:          slog.NewLogLogger(g.Logger.Handler(), slog.LevelWarn),
	}
	go func() { errc <- fmt.Errorf("serving /metrics: %w", srv.Serve(ln)) }()
	return srv, nil
}

// serverTimeout is a Config timeout as http.Server takes it: zero is the default, negative
// is none.
func serverTimeout(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}
