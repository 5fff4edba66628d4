package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

const (
	namedSend = `mutation Send($in: SendMessageInput!) { sendMessage(input: $in) { seq } }`
	namedRead = `query Read($id: ID!) { conversation(id: $id) { maxSeq history(limit: 20) { messages { seq content } } } }`
)

// scrapeMetrics reads /metrics as Prometheus does and flattens it into
// `name{k="v",...}` -> value, labels sorted; a histogram gives its _count and _sum.
func scrapeMetrics(g *gatewaytest.Gateway) map[string]float64 {
	g.T.Helper()
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		g.T.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		g.T.Fatalf("/metrics answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		g.T.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name+labelSet(m)] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[name+"_count"+labelSet(m)] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labelSet(m)] = m.GetHistogram().GetSampleSum()
			case m.Gauge != nil:
				out[name+labelSet(m)] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func labelSet(m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	if len(labels) == 0 {
		return ""
	}
	sort.Strings(labels)
	return "{" + strings.Join(labels, ",") + "}"
}

// Ensure /metrics, after a send, a read on a cold then a warm cache and a forbidden read,
// holds every series an operator watches with the counts those requests imply.
func TestMetricsAfterRequests(t *testing.T) {
	g := gatewaytest.Start(t)
	alice, bob, carol := g.Token("alice"), g.Token("bob"), g.Token("carol")
	for range 2 {
		if r := g.Post(alice, namedSend, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "hi"}}); len(r.Errors) > 0 {
			t.Fatalf("send: %+v", r.Errors)
		}
	}
	read := func(token string) gatewaytest.Response {
		return g.Post(token, namedRead, map[string]any{"id": "si_alice_bob"})
	}
	before := scrapeMetrics(g)
	if r := read(bob); len(r.Errors) > 0 {
		t.Fatalf("cold read: %+v", r.Errors)
	}
	cold := scrapeMetrics(g)
	if r := read(bob); len(r.Errors) > 0 {
		t.Fatalf("warm read: %+v", r.Errors)
	}
	warm := scrapeMetrics(g)
	const hits, misses = "msggate_chunk_cache_hits_total", "msggate_chunk_cache_misses_total"
	const memHits, memMisses = "msggate_chunk_memory_hits_total", "msggate_chunk_memory_misses_total"
	if cold[misses] <= before[misses] || cold[hits] != before[hits] || cold[memMisses] <= before[memMisses] {
		t.Errorf("cold read: cache misses %v -> %v, hits %v -> %v, memory misses %v -> %v; want more misses, no hits",
			before[misses], cold[misses], before[hits], cold[hits], before[memMisses], cold[memMisses])
	}
	// The chunk read under the conversation's chunks version stays in the instance's memory:
	// the warm read is served from there, without asking Redis for it.
	if warm[memHits] <= cold[memHits] || warm[hits] != cold[hits] || warm[misses] != cold[misses] {
		t.Errorf("warm read: memory hits %v -> %v, cache hits %v -> %v, misses %v -> %v; want more memory hits, no Redis reads",
			cold[memHits], warm[memHits], cold[hits], warm[hits], cold[misses], warm[misses])
	}
	if warm["msggate_chunk_memory_bytes"] <= 0 || warm["msggate_chunk_memory_chunks"] != 1 {
		t.Errorf("memory holds %v bytes in %v chunks, want one chunk", warm["msggate_chunk_memory_bytes"], warm["msggate_chunk_memory_chunks"])
	}
	if code := g.ErrorCode(carol, namedRead, map[string]any{"id": "si_alice_bob"}); code != "FORBIDDEN" {
		t.Fatalf("non-member read: code %q", code)
	}
	if code := g.ErrorCode(alice, "{", nil); code != "GRAPHQL_PARSE_FAILED" {
		t.Fatalf("unparsable query: code %q", code)
	}

	s := scrapeMetrics(g)
	for series, want := range map[string]float64{
		`msggate_graphql_requests_total{operation="Send"}`:                                2,
		`msggate_graphql_requests_total{operation="Read"}`:                                3,
		`msggate_graphql_requests_total{operation="(invalid)"}`:                           1,
		`msggate_graphql_request_duration_seconds_count{operation="Send"}`:                2,
		`msggate_graphql_request_duration_seconds_count{operation="Read"}`:                3,
		`msggate_graphql_errors_total{code="FORBIDDEN",operation="Read"}`:                 1,
		`msggate_graphql_errors_total{code="GRAPHQL_PARSE_FAILED",operation="(invalid)"}`: 1,
	} {
		if s[series] != want {
			t.Errorf("%s = %v, want %v", series, s[series], want)
		}
	}
	for _, series := range []string{
		`msggate_graphql_request_duration_seconds_sum{operation="Read"}`,
		`msggate_dataloader_batch_size_count{loader="chunks"}`,
		`msggate_dataloader_batch_size_sum{loader="chunks"}`,
		`msggate_dataloader_batch_size_count{loader="access"}`,
		`msggate_mongodb_command_duration_seconds_count{command="find"}`,
		`msggate_mongodb_command_duration_seconds_sum{command="find"}`,
		`msggate_redis_call_duration_seconds_count{command="pipeline"}`,
		`msggate_redis_call_duration_seconds_sum{command="pipeline"}`,
		`msggate_redis_call_duration_seconds_count{command="evalsha"}`,
	} {
		if s[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, s[series])
		}
	}
	if s[`msggate_mongodb_command_duration_seconds_count{command="insert"}`]+s[`msggate_mongodb_command_duration_seconds_count{command="update"}`] <= 0 {
		t.Error("no MongoDB write was timed after two sends")
	}
	if _, ok := s[`msggate_graphql_errors_total{code="FORBIDDEN",operation="Send"}`]; ok {
		t.Error("a successful send counted an error")
	}
	// Both stores were healthy throughout: an alert on failures must stay quiet.
	for series, v := range s {
		if strings.HasPrefix(series, "msggate_mongodb_command_failures_total") || strings.HasPrefix(series, "msggate_redis_call_failures_total") {
			t.Errorf("healthy stores, yet %s = %v", series, v)
		}
	}
}

// Ensure /readyz answers 200 while MongoDB and Redis answer, 503 naming Redis while it is
// stopped, 200 again once it is back, and 503 naming MongoDB when that is gone.
func TestReadyzFollowsDependencies(t *testing.T) {
	g := gatewaytest.Start(t)
	type readiness struct {
		Status  string
		Failing []string
		Checks  map[string]string
	}
	readyz := func() (int, readiness) {
		resp, err := http.Get(g.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r readiness
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("/readyz %d: body is not JSON: %v", resp.StatusCode, err)
		}
		return resp.StatusCode, r
	}
	// waitFor polls: go-redis refuses to dial for a moment after a burst of dial errors.
	waitFor := func(what string, want int) readiness {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, r := readyz()
			if code == want {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz stays %d %+v, want %d", what, code, r, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if code, r := readyz(); code != http.StatusOK || r.Status != "ready" || r.Checks["mongodb"] != "ok" || r.Checks["redis"] != "ok" {
		t.Fatalf("both up: %d %+v", code, r)
	}
	g.Redis.Stop()
	r := waitFor("Redis stopped", http.StatusServiceUnavailable)
	if len(r.Failing) != 1 || r.Failing[0] != "redis" || r.Checks["mongodb"] != "ok" || r.Status != "unavailable" {
		t.Errorf("Redis stopped: %+v, want only redis failing", r)
	}
	g.Redis.Start()
	waitFor("Redis back", http.StatusOK)
	if err := g.Store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = waitFor("MongoDB gone", http.StatusServiceUnavailable)
	if len(r.Failing) != 1 || r.Failing[0] != "mongodb" || r.Checks["redis"] != "ok" {
		t.Errorf("MongoDB gone: %+v, want only mongodb failing", r)
	}
}

// logsWith returns the logged lines whose request_id is id.
func logsWith(t *testing.T, logs *testenv.LogBuffer, id string) []map[string]any {
	var out []map[string]any
	for _, line := range logs.Lines(t) {
		if line["request_id"] == id {
			out = append(out, line)
		}
	}
	return out
}

// openGateway opens a gateway on the test's own servers, as gatewaytest.Start does but without
// serving it, with logger and obs watching it.
func openGateway(t *testing.T, logger *slog.Logger, obs gateway.Observers) (*gateway.Gateway, *testenv.RedisServer) {
	t.Helper()
	rs := testenv.Redis(t)
	cfg := gatewaytest.Config(rs.URL(), testenv.Mongo(t))
	return gatewaytest.OpenObserved(t, cfg, obs, logger), rs
}

// Ensure each request's ID (the client's, or a generated one) is echoed in X-Request-ID and
// found in its access log line and in the error line the gateway logs for it.
func TestRequestIDInLogs(t *testing.T) {
	var logs testenv.LogBuffer
	m, rs := openGateway(t, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), gateway.Observers{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	g := &gatewaytest.Gateway{Gateway: m, T: t, URL: srv.URL, Redis: rs}
	alice := g.Token("alice")
	in := map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "hi"}}

	resp, r := gatewaytest.PostQuery(t, srv.URL, alice, "client-chosen-42", namedSend, in)
	if len(r.Errors) > 0 || resp.Header.Get("X-Request-ID") != "client-chosen-42" {
		t.Fatalf("send: errors %+v, X-Request-ID %q", r.Errors, resp.Header.Get("X-Request-ID"))
	}
	access := logsWith(t, &logs, "client-chosen-42")
	if len(access) != 1 {
		t.Fatalf("lines with the request's ID: %v, want its access line", access)
	}
	for k, v := range map[string]any{"msg": "request", "method": "POST", "path": "/query", "status": 200.0, "operation": "Send"} {
		if access[0][k] != v {
			t.Errorf("access line %s = %v, want %v (%v)", k, access[0][k], v, access[0])
		}
	}

	// With Redis gone a send is UNAVAILABLE, which the error presenter logs for the operator.
	rs.Stop()
	resp, r = gatewaytest.PostQuery(t, srv.URL, alice, "", namedSend, in)
	if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "UNAVAILABLE" {
		t.Fatalf("send with Redis down: %+v", r)
	}
	id := resp.Header.Get("X-Request-ID")
	if id == "" {
		t.Fatal("no X-Request-ID was generated")
	}
	var sawError, sawAccess bool
	for _, line := range logsWith(t, &logs, id) {
		switch line["msg"] {
		case "request failed":
			sawError = line["level"] == "ERROR" && line["code"] == "UNAVAILABLE"
		case "request":
			// Nothing but "unavailable": 503, with Retry-After (Overload in docs/operations.md).
			sawAccess = line["operation"] == "Send" && line["status"] == 503.0
		}
	}
	if !sawError || !sawAccess {
		t.Errorf("generated ID %q: error line %v, access line %v; lines %v", id, sawError, sawAccess, logsWith(t, &logs, id))
	}
}

// blockingFind holds MongoDB finds on the msg collection while armed, so that a request is
// certainly in flight when the gateway is told to stop.
type blockingFind struct {
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

// observe is the gateway's Observers.OnMongoCommand.
func (b *blockingFind) observe(_ context.Context, command, collection string) {
	if command != "find" || collection != "msg" {
		return
	}
	b.mu.Lock()
	armed := b.armed
	b.armed = false
	b.mu.Unlock()
	if armed {
		close(b.entered)
		<-b.release
	}
}

// Ensure stopping the server (what SIGINT and SIGTERM do) closes the listener at once but lets
// a request already running finish with its full answer, and that Serve then returns cleanly.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	block := &blockingFind{entered: make(chan struct{}), release: make(chan struct{})}
	m, _ := openGateway(t, gatewaytest.Logger(t), gateway.Observers{OnMongoCommand: block.observe})
	msgs := []*im.Message{{SendID: "alice", RecvID: "bob", ContentType: 101, Content: "drained"}}
	if _, err := m.Ingest.Ingest(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addrc, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- m.Serve(ctx, func(addr string) { addrc <- addr }) }()
	addr := <-addrc
	url := "http://" + addr
	g := &gatewaytest.Gateway{Gateway: m, T: t, URL: url}
	bob := g.Token("bob")

	block.mu.Lock()
	block.armed = true
	block.mu.Unlock()
	type answer struct {
		resp *http.Response
		r    gatewaytest.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, r, err := gatewaytest.Call(url, bob, "", namedRead, map[string]any{"id": "si_alice_bob"})
		answered <- answer{resp, r, err}
	}()
	<-block.entered // the read is inside MongoDB now

	stop()
	gatewaytest.WaitFor(t, 15*time.Second, "the server still accepts connections after being told to stop", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return true // the listener is closed
		}
		conn.Close()
		return false
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a request was in flight", err)
	default:
	}

	close(block.release)
	a := <-answered
	if a.err != nil {
		t.Fatalf("in-flight read during shutdown: %v", a.err)
	}
	var r struct {
		Conversation struct {
			History struct{ Messages []struct{ Content string } }
		}
	}
	if a.resp.StatusCode != http.StatusOK || len(a.r.Errors) > 0 || json.Unmarshal(a.r.Data, &r) != nil ||
		len(r.Conversation.History.Messages) != 1 || r.Conversation.History.Messages[0].Content != "drained" {
		t.Fatalf("in-flight read during shutdown: %d %s %+v", a.resp.StatusCode, a.r.Data, a.r.Errors)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after draining: %v", err)
	}
}
