package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of msggate's spans unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) names another.
const DefaultServiceName = "msggate"

// The standard environment variables that turn tracing on or off; the OpenTelemetry SDK reads
// the rest of them itself (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*, ...).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvDisabled       = "OTEL_SDK_DISABLED"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Options configures Start. The zero value follows the environment alone.
type Options struct {
	// Endpoint is an OTLP/HTTP collector's base URL (http://collector:4318); spans are sent
	// to its /v1/traces. It overrides OTEL_EXPORTER_OTLP_ENDPOINT. Empty: the environment
	// decides, and tracing is off unless it names an endpoint.
	Endpoint string
	// Sampler replaces the sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name
	// (the SDK's default: parentbased_always_on). The bench sets one; serve leaves it to the
	// environment.
	Sampler sdktrace.Sampler
}

// Tracing is tracing turned on: its provider exports spans until Shutdown. A nil *Tracing is
// tracing off, and its methods are safe to call.
type Tracing struct {
	provider *sdktrace.TracerProvider
	endpoint string
}

// Start turns tracing on when Options.Endpoint or the environment asks for it, and returns
// nil, with no error, when neither does: tracing is off unless configured. It is on when
// Endpoint is set, or OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is,
// or OTEL_TRACES_EXPORTER is "otlp" (the SDK's default endpoint, http://localhost:4318); it
// stays off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever else is set.
// Spans go out over OTLP/HTTP (protobuf), in batches; another protocol is refused rather
// than ignored, so that a collector listening for gRPC is not sent HTTP in silence.
func Start(ctx context.Context, o Options) (*Tracing, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvDisabled)), "true") {
		return nil, nil
	}
	exporter := strings.TrimSpace(os.Getenv(EnvExporter))
	switch exporter {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("%s=%q: msggate exports traces over OTLP only (otlp or none)", EnvExporter, exporter)
	}
	envEndpoint := firstSet(EnvTracesEndpoint, EnvEndpoint)
	if o.Endpoint == "" && envEndpoint == "" && exporter == "" {
		return nil, nil
	}
	if p := firstSet(EnvTracesProtocol, EnvProtocol); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("%s=%q: msggate sends traces over OTLP/HTTP only (http/protobuf, port 4318)", EnvProtocol, p)
	}
	var exportOpts []otlptracehttp.Option
	endpoint := envEndpoint
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("trace endpoint %q: want an OTLP/HTTP collector's URL, such as http://collector:4318", o.Endpoint)
		}
		// As OTEL_EXPORTER_OTLP_ENDPOINT is read: a base URL, to which the signal's path
		// is added.
		endpoint = strings.TrimSuffix(o.Endpoint, "/") + "/v1/traces"
		exportOpts = append(exportOpts, otlptracehttp.WithEndpointURL(endpoint))
	}
	if endpoint == "" {
		endpoint = "http://localhost:4318/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, exportOpts...)
	if err != nil {
		return nil, fmt.Errorf("trace exporter: %w", err)
	}
	// The service is msggate unless the environment names it otherwise: the detectors run in
	// order, and a later one's attributes win.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if o.Sampler != nil {
		opts = append(opts, sdktrace.WithSampler(o.Sampler))
	}
	return &Tracing{provider: sdktrace.NewTracerProvider(opts...), endpoint: endpoint}, nil
}

// firstSet returns the first of the environment variables names that is set and not blank.
func firstSet(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// Provider returns the tracer provider to hand to msggate's components, or nil when tracing
// is off: a component given nil installs no instrumentation at all.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// Endpoint is where spans are sent ("" when tracing is off), for the start-up log line.
func (t *Tracing) Endpoint() string {
	if t == nil {
		return ""
	}
	return t.endpoint
}

// Shutdown exports the spans still buffered and stops the exporter; ctx bounds the wait.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Propagator reads and writes the W3C trace context (traceparent, tracestate): a client or a
// proxy that sends traceparent has its trace continued by the gateway.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}
