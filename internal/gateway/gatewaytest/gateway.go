package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/testenv"
)

// gateway is a msggate started through Main, as `go run .` starts it, on a real redis-server
// and FerretDB, served over real HTTP.
type gateway struct {
	t      testing.TB
	m      *Main
	url    string
	redis  *testenv.RedisServer
	mongo  *testenv.MongoCommands
	rcount *testenv.RedisRoundTrips
}

func startGateway(t testing.TB) *gateway {
	t.Helper()
	rs := testenv.Redis(t)
	g := &gateway{t: t, redis: rs, mongo: &testenv.MongoCommands{}, rcount: &testenv.RedisRoundTrips{}}
	cfg := testConfig(rs, testenv.Mongo(t))
	cfg.MongoMonitor, cfg.RedisHook = g.mongo.Monitor(), g.rcount
	g.m = mustOpen(t, cfg, testLogger(t))
	g.url = serveMain(t, g.m)
	return g
}

// testConfig is the configuration the tests run the gateway with, on their own servers.
func testConfig(rs *testenv.RedisServer, mdb *testenv.MongoDB) Config {
	return Config{
		Addr:          "127.0.0.1:0",
		MongoURI:      mdb.URI(),
		MongoDatabase: mdb.Database(),
		RedisURL:      rs.URL(),
		JWTSecret:     "test-secret-0123456789abcdef0123456789",
		Introspection: true,
		// Generous: under -race on a busy 2-core machine sibling resolvers take a while to
		// reach their loader, and a split batch would show as an extra round trip.
		Loaders: graph.LoaderOptions{Wait: 20 * time.Millisecond},
	}
}

// mustOpen opens a Main on cfg and closes it when the test ends.
func mustOpen(t testing.TB, cfg Config, logger *slog.Logger) *Main {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := Open(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// serveMain serves m's handler over real HTTP until the test ends and returns its URL.
func serveMain(t testing.TB, m *Main) string {
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func (g *gateway) token(user string) string {
	g.t.Helper()
	tok, err := auth.Issue(g.m.Secret, user, false, time.Hour, time.Now())
	if err != nil {
		g.t.Fatal(err)
	}
	return tok
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// post sends one GraphQL request over HTTP with the given bearer token ("" for none).
func (g *gateway) post(token, query string, vars map[string]any) gqlResponse {
	g.t.Helper()
	_, r := postQuery(g.t, g.url, token, "", query, vars)
	return r
}

// postQuery sends one GraphQL request to url's /query with a bearer token and an
// X-Request-ID (each "" for none) and returns the response with its decoded body.
func postQuery(t testing.TB, url, token, requestID, query string, vars map[string]any) (*http.Response, gqlResponse) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if requestID != "" {
		req.Header.Set("X-Request-ID", requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out gqlResponse
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("response %d is not JSON: %s", resp.StatusCode, raw)
	}
	return resp, out
}

// query sends a request that must succeed and decodes its data into out.
func (g *gateway) query(token, query string, vars map[string]any, out any) {
	g.t.Helper()
	r := g.post(token, query, vars)
	if len(r.Errors) > 0 {
		g.t.Fatalf("unexpected errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		g.t.Fatalf("decode %s: %v", r.Data, err)
	}
}

// errorCode sends a request that must fail and returns its first error's code.
func (g *gateway) errorCode(token, query string, vars map[string]any) string {
	g.t.Helper()
	r := g.post(token, query, vars)
	if len(r.Errors) == 0 {
		g.t.Fatalf("expected an error, got data %s", r.Data)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

// send ingests n chat messages from sender to recvID through the Go ingest path, in one batch.
func (g *gateway) send(sender, recvID, groupID string, n int) {
	g.t.Helper()
	msgs := make([]*im.Message, n)
	for i := range msgs {
		msgs[i] = &im.Message{SendID: sender, RecvID: recvID, GroupID: groupID, ContentType: 101, Content: fmt.Sprintf("m%d", i+1)}
	}
	if _, err := g.m.Ingest.Ingest(context.Background(), msgs); err != nil {
		g.t.Fatal(err)
	}
}

// testLogger sends the gateway's logs to the test log, shown only when a test fails (or -v).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func issueAdmin(g *gateway) (string, error) {
	return auth.Issue(g.m.Secret, "root", true, time.Hour, time.Now())
}
