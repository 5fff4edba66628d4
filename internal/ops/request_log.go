package ops

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDAttribute is the span attribute that carries a traced request's ID.
const RequestIDAttribute = "msggate.request_id"

// quietPaths are polled by probes and scrapers every few seconds; their access lines are
// logged at debug level so that they do not drown the rest.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// LogRequests is the outermost HTTP middleware: it gives each request an ID (the incoming
// X-Request-ID when sane, otherwise a new random one), echoes it in the response's
// X-Request-ID header, puts it in the request's context for WithRequestIDs loggers, and logs
// one "request" line when the handler returns: method, path, status, bytes, duration_ms,
// request_id and, for GraphQL, operation.
func LogRequests(logger *slog.Logger, next http.Handler) http.Handler {
	return LogTracedRequests(logger, nil, next)
}

// RequestSpan starts a request's trace span (tracing.RequestSpans): it returns the request's
// context with the span in it and, when the span is recorded, what ends it with the
// response's status and size.
type RequestSpan func(ctx context.Context, r *http.Request) (context.Context, func(status int, bytes int64))

// LogTracedRequests is LogRequests that also starts each request's span with span (nil:
// none, as LogRequests). The line of a request in a sampled trace names the trace (trace_id,
// span_id: WithRequestIDs), and the request's span carries the request ID as
// msggate.request_id, so that each leads to the other.
func LogTracedRequests(logger *slog.Logger, span RequestSpan, next http.Handler) http.Handler {
	logger = WithRequestIDs(logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		info := &requestInfo{id: requestID(r.Header.Get(RequestIDHeader))}
		w.Header().Set(RequestIDHeader, info.id)
		ctx := withRequestInfo(r.Context(), info)
		var endSpan func(int, int64)
		if span != nil {
			ctx, endSpan = span(ctx, r)
		}
		rec := &responseRecorder{ResponseWriter: w}
		if endSpan != nil {
			trace.SpanFromContext(ctx).SetAttributes(attribute.String(RequestIDAttribute, info.id))
			// Deferred: a handler's panic, which net/http recovers, still ends the span.
			defer func() { endSpan(rec.finalStatus(), rec.bytes) }()
		}
		next.ServeHTTP(rec, r.WithContext(ctx))

		level := slog.LevelInfo
		if quietPaths[r.URL.Path] {
			level = slog.LevelDebug
		}
		if !logger.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.finalStatus()),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(time.Since(began).Microseconds())/1000),
		}
		if op := info.operationName(); op != "" {
			attrs = append(attrs, slog.String("operation", op))
		}
		logger.LogAttrs(ctx, level, "request", attrs...)
	})
}

// responseRecorder notes the status and size of a response. It keeps the optional interfaces
// streaming and WebSocket transports need (Flush, Hijack) and unwraps for
// http.ResponseController.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// finalStatus is the response's status once the handler has returned.
func (w *responseRecorder) finalStatus() int {
	if w.status == 0 {
		// Nothing was written: net/http answers 200 with an empty body.
		return http.StatusOK
	}
	return w.status
}

func (w *responseRecorder) WriteHeader(code int) {
	// 1xx answers other than 101 are interim; the final status comes after them.
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *responseRecorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *responseRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
