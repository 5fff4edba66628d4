package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/tracing"
)

// tracedHistoryName is the warm history page on a gateway with tracing on, sampling 1% of
// requests, measured against its twin with tracing off, opened and filled the same way: what
// tracing costs a page when it is on, as operators run it. (Against the bench's first
// gateway, a twin without tracing measured 0.90x on a busy machine: the two must be alike.)
const tracedHistoryName = "history page, tracing sampled at 1% vs off (100 messages, warm)"

// traceSampleRatio is the share of requests the traced gateway records.
const traceSampleRatio = 0.01

// tracedGateway is another gateway in msggate's mode over a store of its own filled with the
// bench's data; with tracing on, it exports over OTLP/HTTP to a collector in this process.
type tracedGateway struct {
	g       *gateway.Gateway
	handler http.Handler // the gateway's, for allocation counts
	history target
	spans   *atomic.Int64 // export requests the collector took
	close   func()
}

// startTraced opens such a gateway: its embedded store under dir/name, its Redis database db
// of the bench's redis-server (the bench's gateway keeps the same keys in database 0),
// configured as the bench's gateway is, then tracing on when traced. The tracer provider and
// its collector are made either way, so that the twins differ by the gateway's tracing alone.
func startTraced(ctx context.Context, dir, name, redisURL string, db int, traced bool, configure func(*gateway.Config)) (_ *tracedGateway, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	exports := &atomic.Int64{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
	}))
	closers = append(closers, collector.Close)
	traces, err := tracing.Start(ctx, tracing.Options{Endpoint: collector.URL,
		Sampler: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(traceSampleRatio))})
	if err != nil {
		return nil, err
	}
	if traces == nil {
		return nil, fmt.Errorf("tracing stayed off (%s or %s set?)", tracing.EnvDisabled, tracing.EnvExporter)
	}
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = traces.Shutdown(sctx)
	})
	cfg := benchConfig(filepath.Join(dir, name), fmt.Sprintf("%s/%d", strings.TrimSuffix(redisURL, "/0"), db))
	if configure != nil {
		configure(&cfg)
	}
	if traced {
		cfg.TracerProvider = traces.Provider()
	}
	g, err := gateway.Open(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = g.Close() })
	if err := fill(ctx, g); err != nil {
		return nil, fmt.Errorf("filling the traced gateway's store: %w", err)
	}
	token, err := auth.Issue(g.Secret, viewer, false, 24*time.Hour, time.Now())
	if err != nil {
		return nil, err
	}
	handler := g.Handler()
	url, stop, err := serve(handler)
	if err != nil {
		return nil, err
	}
	closers = append(closers, stop)
	return &tracedGateway{g: g, handler: handler, spans: exports, close: closeAll,
		history: target{url: url + "/query", token: token, body: graphQLBody(historyQuery, map[string]any{"c": longConversation()})}}, nil
}
