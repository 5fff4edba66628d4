package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/testenv"
)

// openIMGateway is the GraphQL handler wired as in OpenIM mode over an OpenIM deployment that
// openimtest writes, as OpenIM v3.8 does, on FerretDB and a real redis-server; served over
// real HTTP. msggate's own connections are watched: Mongo counts every command they send.
type openIMGateway struct {
	*openimtest.Deployment
	t     *testing.T
	url   string
	Mongo *testenv.MongoCommands
}

func startOpenIM(t *testing.T) *openIMGateway {
	t.Helper()
	m := testenv.Mongo(t)
	rs := testenv.Redis(t)
	fixtureRedis := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = fixtureRedis.Close() })
	g := &openIMGateway{Deployment: openimtest.New(t, m.Connect(t, nil), fixtureRedis), t: t, Mongo: &testenv.MongoCommands{}}

	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := openim.Open(context.Background(), m.Connect(t, g.Mongo.Monitor()), rdb, openim.Options{Secret: g.Secret})
	if err != nil {
		t.Fatal(err)
	}
	r := &graph.Resolver{Conversations: store, Chunks: history.OpenIMChunks(store), AdjustViews: history.OpenIMQuotes}
	srv := httptest.NewServer(graph.NewHandler(r, graph.HandlerOptions{
		Authenticator: auth.UserTokens(store),
		TokenHeader:   "token",
		Introspection: true,
		// Generous: under -race sibling resolvers take a while to reach their loader.
		Loaders: graph.LoaderOptions{Wait: 20 * time.Millisecond},
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// post sends one GraphQL request with header set as given (nil: none).
func (g *openIMGateway) post(header http.Header, query string, vars map[string]any) gqlResponse {
	g.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, g.url+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		g.t.Fatalf("response %d is not JSON: %s", resp.StatusCode, raw)
	}
	return out
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// query sends a request with token as a bearer token; it must succeed, and its data is
// decoded into out.
func (g *openIMGateway) query(token, query string, vars map[string]any, out any) {
	g.t.Helper()
	r := g.post(bearer(token), query, vars)
	if len(r.Errors) > 0 {
		g.t.Fatalf("unexpected errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		g.t.Fatalf("decode %s: %v", r.Data, err)
	}
}

// errorCode sends a request that must fail and returns its first error's code.
func (g *openIMGateway) errorCode(header http.Header, query string, vars map[string]any) string {
	g.t.Helper()
	r := g.post(header, query, vars)
	if len(r.Errors) == 0 {
		g.t.Fatalf("expected an error, got data %s", r.Data)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

// dialWS opens a graphql-transport-ws connection and sends connection_init with payload.
func (g *openIMGateway) dialWS(payload map[string]any) *websocket.Conn {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(g.url, "http", "ws", 1)+"/query",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { _ = conn.CloseNow() })
	writeWS(g.t, conn, map[string]any{"type": "connection_init", "payload": payload})
	return conn
}

func writeWS(t *testing.T, conn *websocket.Conn, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// readWS returns the next message that is not a keepalive, or the error that ended the
// connection.
func readWS(t *testing.T, conn *websocket.Conn) (map[string]any, error) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := conn.Read(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] != "ping" && m["type"] != "pong" && m["type"] != "ka" {
			return m, nil
		}
	}
}
