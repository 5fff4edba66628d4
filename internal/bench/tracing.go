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
// requests, measured against the bench's own gateway, which has tracing off: what tracing
// costs a page when it is on, as operators run it.
const tracedHistoryName = "history page, tracing sampled at 1% vs off (100 messages, warm)"

// traceSampleRatio is the share of requests the traced gateway records.
const traceSampleRatio = 0.01

// tracedGateway is a second gateway in msggate's mode with tracing on, over a store of its own
// filled with the bench's data, exporting over OTLP/HTTP to a collector in this process.
type tracedGateway struct {
	g       *gateway.Gateway
	handler http.Handler // the gateway's, for allocation counts
	history target
	spans   *atomic.Int64 // export requests the collector took
	close   func()
}

// startTraced opens the traced gateway: its embedded store under dir, its Redis another
// database of the bench's redis-server (the bench's gateway keeps the same keys in database
// 0), configured as the bench's gateway is, then tracing on.
func startTraced(ctx context.Context, dir, redisURL string, configure func(*gateway.Config)) (_ *tracedGateway, err error) {
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
	cfg := benchConfig(filepath.Join(dir, "traced-gateway"), strings.TrimSuffix(redisURL, "/0")+"/2")
	if configure != nil {
		configure(&cfg)
	}
	cfg.TracerProvider = traces.Provider()
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
