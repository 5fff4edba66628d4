package ops

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

func jsonLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

func get(t *testing.T, url, requestID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if requestID != "" {
		req.Header.Set(RequestIDHeader, requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// Ensure every request gets an ID (its own when sane, a fresh one otherwise), echoed in the
// response, carried by lines the handler logs with its context, and in one access line with
// the request's method, path, status and size.
func TestLogRequests(t *testing.T) {
	var buf testenv.LogBuffer
	logger := jsonLogger(&buf, slog.LevelInfo)
	inner := WithRequestIDs(logger)
	srv := httptest.NewServer(LogRequests(logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.InfoContext(r.Context(), "inside", "seen_id", RequestID(r.Context()))
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	})))
	defer srv.Close()

	cases := []struct {
		name, incoming string
		keep           bool
	}{
		{"uuid", "3f2a1c9e-7b4d-4e8a-9c61-0d5e2f7a8b90", true},
		{"proxy trace id", "Root=1-5759e988-bd862e3fe1be46a994272793", true},
		{"none", "", false},
		{"spaces", "two words", false},
		{"quote", `a"b`, false},
		{"too long", strings.Repeat("a", maxRequestIDLen+1), false},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		resp := get(t, srv.URL+"/some/path", c.incoming)
		id := resp.Header.Get(RequestIDHeader)
		switch {
		case c.keep && id != c.incoming:
			t.Errorf("%s: echoed %q, want the incoming %q", c.name, id, c.incoming)
		case !c.keep && (id == "" || id == c.incoming || !saneRequestID(id)):
			t.Errorf("%s: echoed %q, want a fresh sane ID", c.name, id)
		case seen[id]:
			t.Errorf("%s: ID %q was given before", c.name, id)
		}
		seen[id] = true

		lines := buf.Lines(t)
		if len(lines) < 2 {
			t.Fatalf("%s: %d log lines, want the handler's and the access line", c.name, len(lines))
		}
		handler, access := lines[len(lines)-2], lines[len(lines)-1]
		if handler["msg"] != "inside" || handler["request_id"] != id || handler["seen_id"] != id {
			t.Errorf("%s: handler's line %v does not carry request_id %q", c.name, handler, id)
		}
		want := map[string]any{"msg": "request", "method": "GET", "path": "/some/path", "status": 418.0,
			"bytes": float64(len("short and stout")), "request_id": id}
		for k, v := range want {
			if access[k] != v {
				t.Errorf("%s: access line %s = %v, want %v (%v)", c.name, k, access[k], v, access)
			}
		}
		if _, ok := access["duration_ms"].(float64); !ok {
			t.Errorf("%s: access line has no duration_ms: %v", c.name, access)
		}
		if _, ok := access["operation"]; ok {
			t.Errorf("%s: a request that ran no GraphQL names an operation: %v", c.name, access)
		}
	}
}

// Ensure probes and scrapes are logged at debug level only, and a handler that writes nothing
// is logged as the 200 net/http answers.
func TestLogRequestsKeepsProbesQuiet(t *testing.T) {
	var buf testenv.LogBuffer
	srv := httptest.NewServer(LogRequests(jsonLogger(&buf, slog.LevelInfo), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/query"} {
		get(t, srv.URL+p, "")
	}
	lines := buf.Lines(t)
	if len(lines) != 1 || lines[0]["path"] != "/query" || lines[0]["status"] != 200.0 {
		t.Fatalf("logged at info: %v, want only /query with status 200", lines)
	}
}

// Ensure a logger is wrapped once however often WithRequestIDs is applied, so that lines do
// not carry request_id twice.
func TestWithRequestIDsWrapsOnce(t *testing.T) {
	var buf bytes.Buffer
	logger := WithRequestIDs(WithRequestIDs(jsonLogger(&buf, slog.LevelInfo)))
	ctx := withRequestInfo(t.Context(), &requestInfo{id: "abc"})
	logger.With("k", "v").InfoContext(ctx, "hello")
	if got := strings.Count(buf.String(), `"request_id"`); got != 1 {
		t.Errorf("request_id appears %d times in %s", got, buf.String())
	}
	if !strings.Contains(buf.String(), `"request_id":"abc"`) || !strings.Contains(buf.String(), `"k":"v"`) {
		t.Errorf("line %s lacks request_id or the logger's attributes", buf.String())
	}
}

// Ensure a line names its trace only when the trace is sampled: an unsampled trace has no
// spans for the IDs to lead to.
func TestWithRequestIDsNamesSampledTraces(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, sampled := range []bool{true, false} {
		var buf testenv.LogBuffer
		logger := WithRequestIDs(jsonLogger(&buf, slog.LevelInfo))
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
		if sampled {
			sc = sc.WithTraceFlags(trace.FlagsSampled)
		}
		ctx := trace.ContextWithSpanContext(withRequestInfo(t.Context(), &requestInfo{id: "abc"}), sc)
		logger.InfoContext(ctx, "hello")
		lines := buf.Lines(t)
		if len(lines) != 1 || lines[0]["request_id"] != "abc" {
			t.Fatalf("sampled %v: lines %v, want one with request_id abc", sampled, lines)
		}
		_, named := lines[0]["trace_id"]
		if named != sampled || (sampled && (lines[0]["trace_id"] != tid.String() || lines[0]["span_id"] != sid.String())) {
			t.Errorf("sampled %v: line %v", sampled, lines[0])
		}
	}
}
