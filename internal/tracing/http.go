package tracing

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the request spans.
const tracerName = "github.com/msggate/msggate/internal/tracing"

// quietPaths are polled by probes and scrapers every few seconds: a trace of each would bury
// the requests worth following.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// spanNames holds the name of a request's span by path and method, made once: the routes
// named as they are ("POST /query"); any other path is named by its method alone, so that a
// scanner's made-up paths do not each make a span name of their own, and a method outside
// HTTP's own is named "HTTP", so that a client cannot make up span names either.
var spanNames = func() map[string]map[string]string {
	byPath := map[string]map[string]string{}
	for _, path := range []string{"/query", "/", ""} {
		byPath[path] = map[string]string{}
		for _, m := range methods {
			if path == "" {
				byPath[path][m] = m
			} else {
				byPath[path][m] = m + " " + path
			}
		}
	}
	return byPath
}()

var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace}

func spanName(r *http.Request) string {
	byMethod, ok := spanNames[r.URL.Path]
	if !ok {
		byMethod = spanNames[""]
	}
	if name, ok := byMethod[r.Method]; ok {
		return name
	}
	return "HTTP"
}

// RequestSpans returns what starts a server span per HTTP request for the access log
// middleware (ops.LogTracedRequests), continuing the trace a client's traceparent header names
// (Propagator); nil when tp is nil (tracing off). The function returns the request's context
// with the span in it and, for a recorded span, a function that ends it with the response's
// status and size (nil otherwise: an unrecorded span needs no end). The middleware that logs
// each request makes the span, so that the request is given its context once, and its log
// line names the span's trace; it notes the status and size already, for its line.
//
// The span is msggate's own rather than otelhttp's because of what it costs a request that
// is not sampled: otelhttp computes the request's attributes before the sampler decides,
// wraps the request body and the response writer whatever it decides, and wraps the request
// again for its context. Here the sampler decides first, on the span's name and kind alone
// (the standard samplers look at nothing else), and only a recorded span gets attributes; an
// unsampled request costs the start of a span that records nothing.
func RequestSpans(tp trace.TracerProvider) func(ctx context.Context, r *http.Request) (context.Context, func(status int, bytes int64)) {
	if tp == nil {
		return nil
	}
	s := &serverSpans{tracer: tp.Tracer(tracerName),
		start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}}
	return s.begin
}

type serverSpans struct {
	tracer trace.Tracer
	start  []trace.SpanStartOption // made once: a slice made per call would be one more allocation
}

// traceparentKey is traceparent as net/http canonicalizes header names: looked up by it, a
// request without the header costs no canonicalization.
const traceparentKey = "Traceparent"

func (s *serverSpans) begin(ctx context.Context, r *http.Request) (context.Context, func(int, int64)) {
	if quietPaths[r.URL.Path] {
		return ctx, nil
	}
	if _, ok := r.Header[traceparentKey]; ok {
		ctx = Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	ctx, span := s.tracer.Start(ctx, spanName(r), s.start...)
	if !span.IsRecording() {
		return ctx, nil
	}
	span.SetAttributes(requestAttributes(r)...)
	return ctx, func(status int, bytes int64) {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status), semconv.HTTPResponseBodySize(int(bytes)))
		// As OpenTelemetry's HTTP conventions have it for a server: a 4xx is the client's
		// doing, not the span's error.
		if status >= 500 {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

// requestAttributes are a recorded request span's attributes, after OpenTelemetry's HTTP
// server conventions: what otelhttp recorded, without the request body's size (msggate's
// handlers limit and read the body themselves).
func requestAttributes(r *http.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	if _, known := spanNames[""][r.Method]; known {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(r.Method))
	} else {
		attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, semconv.URLScheme(scheme), semconv.URLPath(r.URL.Path))
	if host, port := splitHostPort(r.Host); host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if peer, port := splitHostPort(r.RemoteAddr); peer != "" {
		attrs = append(attrs, semconv.NetworkPeerAddress(peer), semconv.ClientAddress(peer))
		if port > 0 {
			attrs = append(attrs, semconv.NetworkPeerPort(port))
		}
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if r.ProtoMajor > 0 {
		v := strconv.Itoa(r.ProtoMajor)
		if r.ProtoMajor == 1 {
			v += "." + strconv.Itoa(r.ProtoMinor)
		}
		attrs = append(attrs, semconv.NetworkProtocolVersion(v))
	}
	return attrs
}

// splitHostPort splits "host:port" (or a host alone); port is 0 when absent or not a number.
func splitHostPort(hostport string) (string, int) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, 0
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return host, 0
	}
	return host, port
}
