// Package tracing turns OpenTelemetry tracing on when an operator configures it, and gives the
// rest of msggate what it needs to take part: a tracer provider, or nil when tracing is off, so
// that every component can skip its instrumentation entirely and cost nothing; the W3C trace
// context propagator; and the request span that continues a client's trace. It is the only
// package that imports the OpenTelemetry SDK and its exporter; the components beneath it see
// the OpenTelemetry API only (a trace.TracerProvider in their options).
package tracing
