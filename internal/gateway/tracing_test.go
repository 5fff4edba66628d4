package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ops"
)

// tracedGateway is a gateway whose spans a recorder keeps, and whose logs a buffer keeps.
type tracedGateway struct {
	*gatewaytest.Gateway
	spans *tracetest.SpanRecorder
	logs  *testenv.LogBuffer
}

// startTraced starts a gateway with tracing on, every trace sampled, into an in-memory
// recorder. Chunks are not kept in process, so that a page's reads reach Redis and MongoDB.
func startTraced(t *testing.T) *tracedGateway {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	logs := &testenv.LogBuffer{}
	rs := testenv.Redis(t)
	cfg := gatewaytest.Config(rs.URL(), testenv.Mongo(t))
	cfg.TracerProvider = tp
	cfg.ChunkMemory = -1
	cfg.Handler.RateLimit = -1
	gw := gatewaytest.Open(t, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	g := &gatewaytest.Gateway{Gateway: gw, T: t, Redis: rs}
	g.URL = gatewaytest.Serve(t, gw)
	return &tracedGateway{Gateway: g, spans: spans, logs: logs}
}

// queryRequest is a POST of one GraphQL request to the gateway's /query.
func (g *tracedGateway) queryRequest(query string, vars map[string]any) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, g.URL+"/query", bytes.NewReader(body))
	if err != nil {
		g.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// ended returns the spans ended so far.
func (g *tracedGateway) ended() []sdktrace.ReadOnlySpan { return g.spans.Ended() }

// find returns the first ended span named name in trace id, or nil.
func find(spans []sdktrace.ReadOnlySpan, id trace.TraceID, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.SpanContext().TraceID() == id && s.Name() == name {
			return s
		}
	}
	return nil
}

// childrenOf returns the spans whose parent is parent.
func childrenOf(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.SpanContext().TraceID() == parent.SpanContext().TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// attr returns span's attribute key as a string, "" when it has none.
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// names lists spans as "name (parent's name)" for failure messages.
func names(spans []sdktrace.ReadOnlySpan) string {
	byID := map[trace.SpanID]string{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s.Name()
	}
	var out []string
	for _, s := range spans {
		out = append(out, s.Name()+" <- "+byID[s.Parent().SpanID()])
	}
	return strings.Join(out, "; ")
}

// noUserData fails the test when any span of the trace records one of the values a client
// sent or stored (an operation's variables, a message's content).
func noUserData(t *testing.T, spans []sdktrace.ReadOnlySpan, id trace.TraceID, values ...string) {
	t.Helper()
	for _, s := range spans {
		if s.SpanContext().TraceID() != id {
			continue
		}
		for _, kv := range s.Attributes() {
			for _, v := range values {
				if strings.Contains(kv.Value.Emit(), v) {
					t.Errorf("span %q records %s = %q, which holds the client's %q", s.Name(), kv.Key, kv.Value.Emit(), v)
				}
			}
		}
	}
}

const (
	tracedHistory = `query History($id: ID!) { conversation(id: $id) { history(limit: 20) { messages { seq content } } } }`
	// A client's own trace: version 00, trace ID, parent span ID, sampled.
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// Ensure a history page read from the stores is one trace: the HTTP request's span, which
// continues the client's traceparent, the GraphQL operation's span named after the operation,
// the chunk loader's batch beneath it, and beneath that the batch's Redis commands and its
// MongoDB find; that no span records the operation's variables or the messages' content; and
// that the request ID and the trace ID lead to each other in the access log and the span.
func TestTracingHistoryPage(t *testing.T) {
	g := startTraced(t)
	const secret = "tracing-secret-content"
	alice := g.Token("alice")
	msgs := make([]*im.Message, 30)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: "bob", RecvID: "alice", ContentType: 101, Content: secret}
	}
	if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	conv, _ := im.SingleConversationID("alice", "bob")
	// As a write elsewhere leaves them: the page's chunks must come from MongoDB.
	if err := g.Cache.InvalidateChunks(context.Background(), []string{im.DocID(conv, 1)}); err != nil {
		t.Fatal(err)
	}

	req := g.queryRequest(tracedHistory, map[string]any{"id": conv})
	req.Header.Set("traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	req.Header.Set(ops.RequestIDHeader, "trace-me-7")
	_, r := g.Do(req, alice)
	if len(r.Errors) > 0 {
		t.Fatalf("history: %+v", r.Errors)
	}
	id, _ := trace.TraceIDFromHex(clientTraceID)
	var spans []sdktrace.ReadOnlySpan
	var httpSpan sdktrace.ReadOnlySpan
	gatewaytest.WaitFor(t, 5*time.Second, "the request's span", func() bool {
		spans = g.ended()
		httpSpan = find(spans, id, "POST /query")
		return httpSpan != nil
	})
	if httpSpan.Parent().SpanID().String() != clientSpanID || !httpSpan.Parent().IsRemote() {
		t.Errorf("the request's span has parent %v, want the client's span %s", httpSpan.Parent(), clientSpanID)
	}
	if httpSpan.SpanKind() != trace.SpanKindServer || attr(httpSpan, ops.RequestIDAttribute) != "trace-me-7" {
		t.Errorf("request span: kind %v, %s = %q, want server, the request's ID", httpSpan.SpanKind(), ops.RequestIDAttribute, attr(httpSpan, ops.RequestIDAttribute))
	}
	op := find(spans, id, "query History")
	if op == nil || op.Parent().SpanID() != httpSpan.SpanContext().SpanID() {
		t.Fatalf("no operation span under the request's: %s", names(spans))
	}
	if attr(op, "graphql.operation.name") != "History" || attr(op, "graphql.operation.type") != "query" {
		t.Errorf("operation span attributes %v", op.Attributes())
	}
	var batch sdktrace.ReadOnlySpan
	for _, s := range childrenOf(spans, op) {
		if s.Name() == "dataloader chunks" {
			batch = s
		}
	}
	if batch == nil {
		t.Fatalf("no chunk loader batch under the operation: %s", names(spans))
	}
	var redisCalls, finds int
	for _, s := range childrenOf(spans, batch) {
		switch {
		case attr(s, "db.system") == "redis" && s.SpanKind() == trace.SpanKindClient:
			redisCalls++
		case s.Name() == "find msg" && attr(s, "db.system.name") == "mongodb" && attr(s, "db.collection.name") == "msg":
			finds++
		}
	}
	if redisCalls == 0 || finds != 1 {
		t.Errorf("under the chunk batch: %d Redis spans, %d MongoDB finds of msg, want some and one: %s", redisCalls, finds, names(spans))
	}
	noUserData(t, spans, id, conv, secret)

	// The access line names the trace, and so does every line logged for the request.
	access := logsWith(t, g.logs, "trace-me-7")
	if len(access) != 1 || access[0]["msg"] != "request" || access[0]["trace_id"] != clientTraceID ||
		access[0]["span_id"] != httpSpan.SpanContext().SpanID().String() {
		t.Errorf("lines of request trace-me-7: %v, want its access line with trace_id %s", access, clientTraceID)
	}
}

// Ensure a send is one trace: its mutation's span under the request's, and beneath it the
// MongoDB writes and the Redis commands the write path makes, none recording the content.
func TestTracingSend(t *testing.T) {
	g := startTraced(t)
	const secret = "tracing-sent-content"
	resp, r := g.Do(g.queryRequest(namedSend,
		map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": secret}}), g.Token("alice"))
	if len(r.Errors) > 0 {
		t.Fatalf("send: %+v", r.Errors)
	}
	requestID := resp.Header.Get(ops.RequestIDHeader)
	var spans []sdktrace.ReadOnlySpan
	var op sdktrace.ReadOnlySpan
	gatewaytest.WaitFor(t, 5*time.Second, "the send's spans", func() bool {
		spans = g.ended()
		for _, s := range spans {
			if s.Name() == "mutation Send" {
				op = s
			}
		}
		return op != nil && find(spans, op.SpanContext().TraceID(), "POST /query") != nil
	})
	id := op.SpanContext().TraceID()
	httpSpan := find(spans, id, "POST /query")
	if op.Parent().SpanID() != httpSpan.SpanContext().SpanID() || httpSpan.Parent().IsValid() {
		t.Errorf("the mutation's span is not under a root request span: %s", names(spans))
	}
	// Every store command of the send descends from the mutation's span.
	under := func(s sdktrace.ReadOnlySpan) bool {
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, x := range spans {
			byID[x.SpanContext().SpanID()] = x
		}
		for p := s.Parent().SpanID(); p.IsValid(); p = byID[p].Parent().SpanID() {
			if p == op.SpanContext().SpanID() {
				return true
			}
			if byID[p] == nil {
				return false
			}
		}
		return false
	}
	var writes, redisCalls int
	for _, s := range spans {
		if s.SpanContext().TraceID() != id || !under(s) {
			continue
		}
		switch {
		case attr(s, "db.system.name") == "mongodb" && (attr(s, "db.operation.name") == "update" || attr(s, "db.operation.name") == "insert"):
			writes++
		case attr(s, "db.system") == "redis":
			redisCalls++
		}
	}
	if writes == 0 || redisCalls == 0 {
		t.Errorf("under the send: %d MongoDB writes, %d Redis spans, want both: %s", writes, redisCalls, names(spans))
	}
	noUserData(t, spans, id, secret)
	if got := attr(httpSpan, ops.RequestIDAttribute); got != requestID || requestID == "" {
		t.Errorf("the request's span carries request ID %q, the response %q", got, requestID)
	}
	if lines := logsWith(t, g.logs, requestID); len(lines) != 1 || lines[0]["trace_id"] != id.String() {
		t.Errorf("lines of the send's request: %v, want its access line with trace_id %s", lines, id)
	}
}

// Ensure a subscription continues the trace its WebSocket upgrade carried: the subscription's
// span under the upgrade request's, its catch-up reads beneath it, and a span for each event
// delivered, child of the subscription's.
func TestTracingSubscriptionEvent(t *testing.T) {
	g := startTraced(t)
	since := syncToken(g.Gateway, "alice")
	header := http.Header{"Traceparent": {"00-" + clientTraceID + "-" + clientSpanID + "-01"}}
	c := gatewaytest.ConnectWS(t, g.URL, g.Token("alice"), gatewaytest.WSOptions{Header: header})
	c.Subscribe(&since)
	id, _ := trace.TraceIDFromHex(clientTraceID)
	var sub sdktrace.ReadOnlySpan
	gatewaytest.WaitFor(t, 5*time.Second, "the subscription's span", func() bool {
		sub = find(g.ended(), id, "subscription")
		return sub != nil
	})
	g.Send("bob", "alice", "", 1)
	if ev := c.NextEvent(); ev.Type != "NEW_MESSAGE" {
		t.Fatalf("event %+v, want the new message", ev)
	}
	var event sdktrace.ReadOnlySpan
	gatewaytest.WaitFor(t, 5*time.Second, "the event's span", func() bool {
		event = find(g.ended(), id, "subscription event")
		return event != nil
	})
	spans := g.ended()
	if event.Parent().SpanID() != sub.SpanContext().SpanID() {
		t.Errorf("the event's span is not the subscription's child: %s", names(spans))
	}
	if attr(sub, "graphql.operation.type") != "subscription" || sub.SpanKind() != trace.SpanKindServer {
		t.Errorf("subscription span: %v %v", sub.SpanKind(), sub.Attributes())
	}
	// The upgrade request's span lasts as long as the connection; the subscription's parent
	// is that span, which continues the client's.
	if !sub.Parent().IsValid() || sub.Parent().SpanID().String() == clientSpanID {
		t.Errorf("the subscription's parent %v, want the upgrade request's span", sub.Parent())
	}
	var catchUp int
	for _, s := range childrenOf(spans, sub) {
		if attr(s, "db.system") == "redis" {
			catchUp++
		}
	}
	if catchUp == 0 {
		t.Errorf("no Redis read under the subscription (its catch-up): %s", names(spans))
	}
}

// Ensure tracing on costs a request its trace does not sample next to nothing: the warm
// history page, served by the gateway's real handler with tracing on and no request sampled,
// makes at most a few more allocations than the same page from a twin gateway with tracing
// off, on the same stores. The counts take in the process's other goroutines too (the
// gateways' relay and identity loops), so each handler is counted several times, in turn,
// and its lowest count is compared.
func TestTracingUnsampledRequestAllocations(t *testing.T) {
	rs := testenv.Redis(t)
	mdb := testenv.Mongo(t)
	cfg := gatewaytest.Config(rs.URL(), mdb)
	cfg.Handler.RateLimit = -1
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	off := gatewaytest.Open(t, cfg, logger)
	testenv.IndexIDs(t, cfg.MongoURI, cfg.MongoDatabase)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.TracerProvider = tp
	on := gatewaytest.Open(t, cfg, logger)

	msgs := make([]*im.Message, 30)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: "bob", RecvID: "alice", ContentType: 101, Content: "warm page"}
	}
	if _, err := off.Ingest.Ingest(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	conv, _ := im.SingleConversationID("alice", "bob")
	body, _ := json.Marshal(map[string]any{"query": tracedHistory, "variables": map[string]any{"id": conv}})
	token := (&gatewaytest.Gateway{Gateway: off, T: t}).Token("alice")
	page := func(h http.Handler) func() {
		return func() {
			req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"seq":30`)) {
				t.Fatalf("history page: %d %.300s", rec.Code, rec.Body.Bytes())
			}
		}
	}
	handlers := map[string]http.Handler{"off": off.Handler(), "on": on.Handler()}
	lowest := map[string]float64{}
	for round := range 5 {
		for _, name := range []string{"off", "on"} {
			page(handlers[name])() // warm: the chunks in memory, the connections open
			n := testing.AllocsPerRun(100, page(handlers[name]))
			if round == 0 || n < lowest[name] {
				lowest[name] = n
			}
		}
	}
	if len(spans.Ended()) != 0 {
		t.Errorf("%d spans recorded, want none: no request was sampled", len(spans.Ended()))
	}
	t.Logf("allocations per warm history page: tracing off %.0f, tracing on and not sampled %.0f", lowest["off"], lowest["on"])
	if extra := lowest["on"] - lowest["off"]; extra > 3 {
		t.Errorf("an unsampled request makes %.0f allocations with tracing on, %.0f with it off: %.0f more, want at most 3",
			lowest["on"], lowest["off"], extra)
	}
}
