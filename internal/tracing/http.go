package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// quietPaths are polled by probes and scrapers every few seconds: a trace of each would bury
// the requests worth following.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// spanNames are the routes named in span names as they are; any other path is named by its
// method alone, so that a scanner's made-up paths do not each make a span name of their own.
var spanNames = map[string]bool{"/query": true, "/": true}

// Handler wraps next in a server span per HTTP request, continuing the trace a client's
// traceparent header names (Propagator); with tp nil (tracing off) it returns next itself.
// It belongs outside the access log middleware, so that the log line finds the span and
// names its trace.
func Handler(tp trace.TracerProvider, next http.Handler) http.Handler {
	if tp == nil {
		return next
	}
	return otelhttp.NewHandler(next, "msggate",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(Propagator),
		// The request metrics are msggate's own (internal/ops); none are made here.
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return !quietPaths[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if spanNames[r.URL.Path] {
				return r.Method + " " + r.URL.Path
			}
			return r.Method
		}))
}
