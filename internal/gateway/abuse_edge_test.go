package gateway_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/testenv"
)

// Ensure a client on the legacy graphql-ws protocol whose connection_init cannot be checked
// for an internal reason (OpenIM's Redis, where every token check reads, is down) learns no
// more than an HTTP client would: connection_error carries the message and code HTTP answers
// for the same token, never the Redis address or the dial error behind it, which the
// operator finds in the log.
func TestAbuseLegacyWSInitErrorRevealsNoCause(t *testing.T) {
	mdb := testenv.Mongo(t)
	imRedis := testenv.Redis(t)
	deployment := openimtest.NewAt(t, mdb.Connect(t, nil), imRedis.Addr())
	cfg := gatewaytest.Config(testenv.Redis(t).URL(), mdb)
	cfg.JWTSecret = ""
	cfg.OpenIM = gateway.OpenIMConfig{Enabled: true, RedisURL: imRedis.URL(), Secret: deployment.Secret}
	var logs testenv.LogBuffer
	gw := gatewaytest.OpenObserved(t, cfg, gateway.Observers{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	url := gatewaytest.Serve(t, gw)
	token := deployment.Login("bob", 1, 7)
	imRedis.Stop()

	overHTTP := gatewaytest.Client(t, url).Post(token, `{ viewer { userID } }`, nil)
	if len(overHTTP.Errors) != 1 || overHTTP.Errors[0].Extensions["code"] != "UNAVAILABLE" {
		t.Fatalf("over HTTP with OpenIM's Redis down: %+v, want one UNAVAILABLE error", overHTTP.Errors)
	}

	c := gatewaytest.DialWS(t, url, gatewaytest.WSOptions{Protocol: "graphql-ws"})
	c.Write(map[string]any{"type": "connection_init", "payload": map[string]any{"token": token}})
	m := c.Next()
	raw, _ := json.Marshal(m)
	if m["type"] != "connection_error" {
		t.Fatalf("after connection_init: %s, want connection_error", raw)
	}
	var refused gatewaytest.Error
	b, _ := json.Marshal(m["payload"])
	if err := json.Unmarshal(b, &refused); err != nil {
		t.Fatal(err)
	}
	if refused.Message != overHTTP.Errors[0].Message || refused.Extensions["code"] != "UNAVAILABLE" {
		t.Errorf("connection_error %s, want HTTP's message %q and code UNAVAILABLE", b, overHTTP.Errors[0].Message)
	}
	_, port, _ := net.SplitHostPort(imRedis.Addr())
	for _, secret := range []string{imRedis.Addr(), ":" + port, "refused", "dial", "redis get"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("connection_error reveals %q: %s", secret, raw)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Read(ctx); websocket.CloseStatus(err) != 1013 {
		t.Errorf("then closed with %v, want 1013 (try again later)", err)
	}

	logged := false
	for _, line := range logs.Lines(t) {
		if s, _ := line["err"].(string); line["code"] == "UNAVAILABLE" && strings.Contains(s, imRedis.Addr()) {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no log line gives the cause with OpenIM's Redis address %s", imRedis.Addr())
	}
}

// remotePeers is a listener whose connections report peer as their remote address: real HTTP
// over loopback that the gateway sees coming from another machine.
type remotePeers struct {
	net.Listener
	peer net.Addr
}

func (l remotePeers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, l.peer}, nil
}

type remoteConn struct {
	net.Conn
	peer net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.peer }

// serveFrom serves h over real HTTP, to clients that seem to come from peer (nil: loopback,
// as they do), and returns its URL.
func serveFrom(t *testing.T, h http.Handler, peer net.Addr) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if peer != nil {
		srv.Listener = remotePeers{srv.Listener, peer}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// rootPage GETs / with header and returns the status and the body.
func rootPage(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Ensure the demo token GraphiQL opens with on the embedded default reaches only a client on
// the gateway's own machine: a client from elsewhere gets GraphiQL without it, whatever
// forwarding header it writes to pass for local (directly or beside the proxy the gateway
// trusts), and so does a client a proxy on the gateway's machine relays from elsewhere.
func TestAbuseRemoteClientAsksForTheDemoToken(t *testing.T) {
	const demo = "demotoken0f3a9c17e2"
	cfg := gatewaytest.Config(testenv.Redis(t).URL(), testenv.Mongo(t))
	cfg.Playground = true
	gw := gatewaytest.Open(t, cfg, gatewaytest.Logger(t))
	gw.PlaygroundToken = func() string { return demo }
	remote := &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 41000}
	local, fromAfar := serveFrom(t, gw.Handler(), nil), serveFrom(t, gw.Handler(), remote)
	// Behind a proxy that names the client in X-Forwarded-For (-client-ip-header).
	gw.Config.Handler.ClientIPHeader = "X-Forwarded-For"
	proxiedLocal, proxiedFromAfar := serveFrom(t, gw.Handler(), nil), serveFrom(t, gw.Handler(), remote)

	if status, page := rootPage(t, local, nil); status != http.StatusOK || !strings.Contains(page, demo) {
		t.Fatalf("a client on this machine: %d, token given %v; want GraphiQL with the demo token", status, strings.Contains(page, demo))
	}
	for name, tc := range map[string]struct {
		url    string
		header http.Header
	}{
		"from elsewhere": {fromAfar, nil},
		"from elsewhere, X-Forwarded-For: 127.0.0.1":        {fromAfar, http.Header{"X-Forwarded-For": {"127.0.0.1"}}},
		"from elsewhere, X-Real-IP: ::1":                    {fromAfar, http.Header{"X-Real-Ip": {"::1"}}},
		"from elsewhere, Forwarded: for=127.0.0.1":          {fromAfar, http.Header{"Forwarded": {"for=127.0.0.1"}}},
		"beside the trusted proxy, X-Forwarded-For: ::1":    {proxiedFromAfar, http.Header{"X-Forwarded-For": {"::1"}}},
		"relayed from elsewhere by a proxy on this machine": {local, http.Header{"X-Forwarded-For": {"203.0.113.9"}}},
		"relayed from elsewhere by the trusted proxy":       {proxiedLocal, http.Header{"X-Forwarded-For": {"127.0.0.1, 203.0.113.9"}}},
	} {
		status, page := rootPage(t, tc.url, tc.header)
		if strings.Contains(page, demo) {
			t.Errorf("%s: the page holds the demo token", name)
		}
		if status != http.StatusOK || !strings.Contains(page, `id="graphiql"`) {
			t.Errorf("%s: %d, want GraphiQL without a token", name, status)
		}
	}
}

// Ensure a gateway started on a real store with the flags' defaults, as an operator starts
// one in production, shows a client neither its schema nor GraphiQL: an introspection query
// is refused with a GraphQL error that says why, and / answers a short text, no token.
func TestAbuseIntrospectionOfARealStore(t *testing.T) {
	rs, mdb := testenv.Redis(t), testenv.Mongo(t)
	var cfg gateway.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-mongo-uri", mdb.URI(), "-mongo-db", mdb.Database(), "-redis-url", rs.URL(),
		"-data-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	cfg.JWTSecret = gatewaytest.Secret
	g := gatewaytest.New(t, cfg)

	for _, q := range []string{introspectionQuery, `{ __type(name: "Message") { fields { name } } }`} {
		r := g.Post(g.Token("alice"), q, nil)
		if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "FORBIDDEN" || !strings.Contains(r.Errors[0].Message, "introspection") {
			t.Errorf("introspection: %+v, want FORBIDDEN saying introspection is off", r.Errors)
		}
		if string(r.Data) != "" && string(r.Data) != "null" {
			t.Errorf("introspection answered data: %s", r.Data)
		}
	}
	status, page := rootPage(t, g.URL, nil)
	if status != http.StatusOK || strings.Contains(page, "graphiql") || strings.Contains(page, "eyJ") || !strings.Contains(page, "/query") {
		t.Errorf("/ answered %d %q, want a short text pointing at /query", status, page)
	}
}

// Ensure that with -metrics-addr the gateway's metrics, which name its operations and show
// its load, are served only there: a client of the gateway's address finds no /metrics.
func TestAbuseMetricsOnTheClientAddress(t *testing.T) {
	cfg := gatewaytest.Config(testenv.Redis(t).URL(), testenv.Mongo(t))
	cfg.MetricsAddr = "127.0.0.1:0"
	gw := gatewaytest.Open(t, cfg, gatewaytest.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, func(addr string) { listening <- addr }) }()
	addr := <-listening
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := get("http://" + addr + "/metrics"); status != http.StatusNotFound || strings.Contains(body, "msggate_") {
		t.Errorf("/metrics on the client address: %d %.80q, want 404", status, body)
	}
	if status, _ := get("http://" + addr + "/healthz"); status != http.StatusOK {
		t.Errorf("/healthz on the client address: %d", status)
	}
	if status, body := get("http://" + gw.MetricsAddr + "/metrics"); status != http.StatusOK || !strings.Contains(body, "msggate_") {
		t.Errorf("/metrics on -metrics-addr %s: %d %.80q", gw.MetricsAddr, status, body)
	}
}
