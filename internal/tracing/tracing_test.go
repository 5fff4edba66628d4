package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/msggate/msggate/internal/tracing"
)

// collector is an OTLP/HTTP trace receiver: it keeps the spans posted to /v1/traces.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	name, service, traceID, parentID string
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP protobuf export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, receivedSpan{name: s.Name, service: service,
						traceID: hexOf(s.TraceId), parentID: hexOf(s.ParentSpanId)})
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	c.Server = httptest.NewServer(mux)
	t.Cleanup(c.Close)
	return c
}

func (c *collector) received() []receivedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]receivedSpan(nil), c.spans...)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

// clearEnv unsets the variables that turn tracing on or off, for the test.
func clearEnv(t *testing.T) {
	for _, k := range []string{tracing.EnvEndpoint, tracing.EnvTracesEndpoint, tracing.EnvExporter, tracing.EnvDisabled,
		tracing.EnvProtocol, tracing.EnvTracesProtocol, "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
}

// Ensure a request's span (RequestSpans) reaches a collector over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT names it, under OTEL_SERVICE_NAME, continuing the client's
// traceparent, and that Shutdown sends what is still buffered.
func TestExportsOverOTLPHTTP(t *testing.T) {
	clearEnv(t)
	c := startCollector(t)
	t.Setenv(tracing.EnvEndpoint, c.URL)
	t.Setenv("OTEL_SERVICE_NAME", "msggate-test")
	tr, err := tracing.Start(context.Background(), tracing.Options{})
	if err != nil || tr == nil {
		t.Fatalf("Start: %v, %v; want tracing on", tr, err)
	}
	spans := tracing.RequestSpans(tr.Provider())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, end := spans(r.Context(), r); end != nil {
			defer end(http.StatusOK, 2)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/query", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.received()
	if len(got) != 1 || got[0] != (receivedSpan{name: "POST /query", service: "msggate-test",
		traceID: "4bf92f3577b34da6a3ce929d0e0e4736", parentID: "00f067aa0ba902b7"}) {
		t.Errorf("the collector received %+v, want the request's span in the client's trace", got)
	}
}

// Ensure -otlp-endpoint (Options.Endpoint) alone turns tracing on, to that collector, and
// names the service msggate.
func TestEndpointOption(t *testing.T) {
	clearEnv(t)
	c := startCollector(t)
	tr, err := tracing.Start(context.Background(), tracing.Options{Endpoint: c.URL + "/"})
	if err != nil || tr == nil {
		t.Fatalf("Start: %v, %v; want tracing on", tr, err)
	}
	if tr.Endpoint() != c.URL+"/v1/traces" {
		t.Errorf("endpoint %q", tr.Endpoint())
	}
	_, span := tr.Provider().Tracer("test").Start(context.Background(), "work")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.received(); len(got) != 1 || got[0].name != "work" || got[0].service != tracing.DefaultServiceName {
		t.Errorf("the collector received %+v", got)
	}
}

// Ensure tracing is off unless configured, off when the environment says so whatever else it
// sets, and that a protocol msggate cannot speak is refused rather than ignored.
func TestOffUnlessConfigured(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		refused bool
	}{
		{name: "nothing set"},
		{name: "service name alone", env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}},
		{name: "endpoint", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:1"}, on: true},
		{name: "traces endpoint", env: map[string]string{tracing.EnvTracesEndpoint: "http://127.0.0.1:1/v1/traces"}, on: true},
		{name: "exporter otlp", env: map[string]string{tracing.EnvExporter: "otlp"}, on: true},
		{name: "sdk disabled", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:1", tracing.EnvDisabled: "true"}},
		{name: "exporter none", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:1", tracing.EnvExporter: "none"}},
		{name: "grpc", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:1", tracing.EnvProtocol: "grpc"}, refused: true},
		{name: "zipkin", env: map[string]string{tracing.EnvExporter: "zipkin"}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tr, err := tracing.Start(context.Background(), tracing.Options{})
			defer func() { _ = tr.Shutdown(context.Background()) }()
			switch {
			case tc.refused && err == nil:
				t.Errorf("started (%v), want refused", tr)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			case (tr != nil) != tc.on:
				t.Errorf("on: %v, want %v", tr != nil, tc.on)
			}
			if tr == nil && tr.Provider() != nil {
				t.Error("tracing off gives a provider")
			}
		})
	}
}

// Ensure tracing off starts no span: the request path is the one without tracing.
func TestRequestSpansOffIsNil(t *testing.T) {
	if tracing.RequestSpans(nil) != nil {
		t.Error("RequestSpans(nil) is not nil")
	}
}
