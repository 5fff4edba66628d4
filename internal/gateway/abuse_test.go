package gateway_test

// The abuse suite: what a client we do not expect sends a running gateway, each played over
// real HTTP or WebSocket against the real handler, asserting the refusal and that nothing was
// stored or leaked. A new hole found in the trust boundary gets its attack here, beside the
// others. The documented request limits (body size, tokens, depth, aliases, complexity, rate)
// are played by TestLimitsRefuseBeforeStoreWork and the connection limits by
// TestWebSocketConnectionLimits and TestAnonymousRateLimit; docs/security.md lists the defaults
// these tests hold the gateway to.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/server"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure bad input gets a clear error with a code and changes nothing.
func TestBadInputIsRefused(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})

	many := make([]int64, 1001)
	for i := range many {
		many[i] = int64(i + 1)
	}
	forged, _ := auth.Issue([]byte("some-other-secret-0123456789abcdef"), "alice", false, time.Hour, time.Now())
	expired, _ := auth.Issue(g.Secret, "alice", false, time.Hour, time.Now().Add(-2*time.Hour))
	send := func(in map[string]any) map[string]any { return map[string]any{"in": in} }
	convQuery, messagesQuery, sendMutation := gatewaytest.ConversationQuery, gatewaytest.MessagesQuery, gatewaytest.SendMutation
	for _, tc := range []struct {
		name, token, query string
		vars               map[string]any
		code               string
	}{
		{"malformed conversation ID", alice, convQuery, map[string]any{"id": "si_bob_alice"}, "BAD_USER_INPUT"},
		{"unknown conversation kind", alice, convQuery, map[string]any{"id": "zz_1"}, "BAD_USER_INPUT"},
		{"unknown group", alice, convQuery, map[string]any{"id": "sg_nosuchgroup"}, "FORBIDDEN"},
		{"not a member", alice, convQuery, map[string]any{"id": "si_bob_carol"}, "FORBIDDEN"},
		{"seq 0", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{0}}, "BAD_USER_INPUT"},
		{"negative seq", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{-3}}, "BAD_USER_INPUT"},
		{"seq not a number", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []any{"abc"}}, "BAD_USER_INPUT"},
		{"seq beyond int64", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []any{1e30}}, "BAD_USER_INPUT"},
		{"limit beyond int32", alice, `{ conversation(id: "si_alice_bob") { history(limit: 99999999999) { messages { seq } } } }`, nil, "BAD_USER_INPUT"},
		{"1001 seqs", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": many}, "LIMIT_EXCEEDED"},
		{"history limit 201", alice, `{ conversation(id: "si_alice_bob") { history(limit: 201) { messages { seq } } } }`, nil, "LIMIT_EXCEEDED"},
		{"history limit 0", alice, `{ conversation(id: "si_alice_bob") { history(limit: 0) { messages { seq } } } }`, nil, "BAD_USER_INPUT"},
		{"content over 64 KiB", alice, sendMutation, send(map[string]any{"recvID": "bob", "contentType": 101, "content": strings.Repeat("a", 64<<10+1)}), "LIMIT_EXCEEDED"},
		{"both receivers", alice, sendMutation, send(map[string]any{"recvID": "bob", "groupID": "g", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"message to self", alice, sendMutation, send(map[string]any{"recvID": "alice", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"bad receiver ID", alice, sendMutation, send(map[string]any{"recvID": "bo_b", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"notification by a user", alice, sendMutation, send(map[string]any{"recvID": "bob", "contentType": 1400, "content": "x", "options": map[string]any{"isNotNotification": false}}), "FORBIDDEN"},
		{"missing token", "", convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"forged token", forged, convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"expired token", expired, convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"garbage token", "not-a-jwt", sendMutation, send(map[string]any{"recvID": "bob", "contentType": 101, "content": "x"}), "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := g.ErrorCode(tc.token, tc.query, tc.vars); code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
		})
	}
	if c := g.Conversation(alice, "si_alice_bob"); c.MaxSeq != 1 {
		t.Errorf("refused requests stored something: maxSeq %d, want 1", c.MaxSeq)
	}
}

// Ensure a request body that is not a GraphQL request is the client's error, not an internal one.
func TestMalformedRequestBody(t *testing.T) {
	g := gatewaytest.Start(t)
	for _, body := range []string{"not json", `{"query": 42}`, `{"query": "{ viewer { userID } }", "variables": "x"}`} {
		resp, err := http.Post(g.URL+"/query", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out gatewaytest.Response
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Errorf("body %q: status %d, %+v, %v", body, resp.StatusCode, out.Errors, err)
		}
	}
}

// ---- Who a client is: tokens and keys ----

// Attacks on how msggate authenticates: tokens of an identity provider, OpenIM tokens, and
// the provider's key set.

// Ensure a token the identity provider minted for another of its applications does not sign
// in: a gateway configured with -jwks but no audience refuses to start, naming -jwt-audience
// and -jwt-any-audience; one with an audience answers the other application's token
// UNAUTHENTICATED with no data, over HTTP and in connection_init.
func TestAbuseTokenForAnotherApplication(t *testing.T) {
	idp := newIdentityProvider(t)
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.IdentityProvider = gateway.IdentityProviderConfig{JWKS: idp.jwks, Issuer: "https://id.example.com/", Audience: "msggate"}
	})

	t.Run("no audience: the start is refused", func(t *testing.T) {
		cfg := gatewaytest.Config(g.Redis.URL(), testenv.Mongo(t))
		cfg.IdentityProvider = gateway.IdentityProviderConfig{JWKS: idp.jwks, Issuer: "https://id.example.com/"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m, err := gateway.Open(ctx, cfg, gatewaytest.Logger(t))
		if err == nil {
			_ = m.Close()
			t.Fatal("a gateway started with -jwks and no -jwt-audience: any application's token would sign in")
		}
		for _, flag := range []string{"-jwt-audience", "-jwt-any-audience"} {
			if !strings.Contains(err.Error(), flag) {
				t.Errorf("the refusal does not name %s: %v", flag, err)
			}
		}
	})

	for name, edit := range map[string]func(jwt.MapClaims){
		"another application": func(c jwt.MapClaims) { c["aud"] = "billing-app" },
		"no audience":         func(c jwt.MapClaims) { delete(c, "aud") },
	} {
		tok := idp.token(t, "alice", edit)
		resp := g.Post(tok, `{ viewer { userID } }`, nil)
		if len(resp.Errors) == 0 || resp.Errors[0].Extensions["code"] != "UNAUTHENTICATED" {
			t.Errorf("%s: errors %+v, want UNAUTHENTICATED", name, resp.Errors)
		}
		if leaked := strings.Contains(string(resp.Data), "alice"); leaked {
			t.Errorf("%s: the answer names the user: %s", name, resp.Data)
		}
		if code := initAndWaitForClose(t, gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{}), tok); code != 4403 {
			t.Errorf("%s: connection_init closed with %d, want 4403", name, code)
		}
	}
	var out struct{ Viewer struct{ UserID string } }
	resp := g.Post(idp.token(t, "alice", nil), `{ viewer { userID } }`, nil)
	if err := json.Unmarshal(resp.Data, &out); err != nil || out.Viewer.UserID != "alice" {
		t.Errorf("the token minted for msggate: %s %+v, want alice", resp.Data, resp.Errors)
	}
}

// rotatingProvider is an identity provider that publishes its key set over HTTPS, can rotate
// to a second key, and answers as slowly as told.
type rotatingProvider struct {
	*httptest.Server
	old, cur *ecdsa.PrivateKey
	reads    atomic.Int64

	mu      sync.Mutex
	rotated bool
	delay   time.Duration
}

func newRotatingProvider(t *testing.T) *rotatingProvider {
	t.Helper()
	p := &rotatingProvider{}
	for _, k := range []**ecdsa.PrivateKey{&p.old, &p.cur} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		*k = key
	}
	jwk := func(kid string, k *ecdsa.PrivateKey) map[string]any {
		pub, _ := k.PublicKey.Bytes()
		enc := base64.RawURLEncoding.EncodeToString
		return map[string]any{"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "x": enc(pub[1:33]), "y": enc(pub[33:])}
	}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.reads.Add(1)
		p.mu.Lock()
		keys, delay := []any{jwk("old", p.old)}, p.delay
		if p.rotated {
			keys = append(keys, jwk("new", p.cur))
		}
		p.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(p.Close)
	return p
}

// rotate publishes the new key beside the old, and from then on answers after delay.
func (p *rotatingProvider) rotate(delay time.Duration) {
	p.mu.Lock()
	p.rotated, p.delay = true, delay
	p.mu.Unlock()
}

// token signs a token for user with the key kid names ("old", "new"; any other: a key of
// nobody's).
func (p *rotatingProvider) token(t *testing.T, kid, user string) string {
	t.Helper()
	key := map[string]*ecdsa.PrivateKey{"old": p.old, "new": p.cur}[kid]
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": user, "iss": "https://id.example.com/",
		"aud": "msggate", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Ensure an anonymous client that sends a token with a made-up key ID and hangs up while the
// gateway reads the provider's keys again does not keep a rotated key out: the read it started
// completes, a token of the new key signs in at once, the key set is read once for both, and
// the made-up key ID itself signs nobody in.
func TestAbuseUnknownKeyIDKeepsRotationOut(t *testing.T) {
	idp := newRotatingProvider(t)
	const minRefresh, readTime = time.Second, 500 * time.Millisecond
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.IdentityProvider = gateway.IdentityProviderConfig{JWKS: idp.URL + "/jwks.json", Issuer: "https://id.example.com/",
			Audience: "msggate", HTTPClient: idp.Client(), MinRefresh: minRefresh}
	})
	const viewer = `{ viewer { userID } }`
	time.Sleep(minRefresh) // since the start's read
	idp.rotate(readTime)

	// The attack: a made-up key ID, and the client hangs up before the keys are read. (A GET:
	// with no body to read first, the server notices the hang-up at once.)
	ctx, hangUp := context.WithTimeout(context.Background(), readTime/5)
	defer hangUp()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/query?query="+url.QueryEscape(viewer), nil)
	req.Header.Set("Authorization", "Bearer "+idp.token(t, "made-up", "mallory"))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the attacker's request was answered (%d) before it hung up: the test did not hang up mid-read", resp.StatusCode)
	}
	time.Sleep(readTime / 5) // the gateway sees the hang-up

	var out struct{ Viewer struct{ UserID string } }
	resp := g.Post(idp.token(t, "new", "alice"), viewer, nil)
	if err := json.Unmarshal(resp.Data, &out); err != nil || out.Viewer.UserID != "alice" {
		t.Fatalf("a token of the rotated key after the attacker hung up: %s %+v, want alice", resp.Data, resp.Errors)
	}
	if n := idp.reads.Load(); n != 2 {
		t.Errorf("the key set was read %d times, want 2 (the start, and one read the attacker's request began)", n)
	}
	resp = g.Post(idp.token(t, "made-up", "mallory"), viewer, nil)
	if len(resp.Errors) == 0 || resp.Errors[0].Extensions["code"] != "UNAUTHENTICATED" || strings.Contains(string(resp.Data), "mallory") {
		t.Errorf("the made-up key ID: %s %+v, want UNAUTHENTICATED and no viewer", resp.Data, resp.Errors)
	}
}

// Ensure an OpenIM token does not keep a WebSocket connection open past its exp, though
// OpenIM's Redis goes on holding it as normal (OpenIM marks nothing when a token lapses): the
// connection is closed with 4401 within a second of the exp, as msggate's own tokens are,
// and the token opens nothing over HTTP after it either.
func TestAbuseOpenIMTokenOutlivesExpiry(t *testing.T) {
	g := gatewaytest.StartOpenIM(t, nil)
	const bob, ios = "bob", 1
	issued := time.Now()
	tok := openimtest.SignToken(g.IM.Secret, openimtest.BuildClaims(bob, ios, 3*time.Second))
	g.IM.SetTokenStatus(bob, ios, tok, openimtest.TokenNormal)
	exp := issued.Add(3 * time.Second).Truncate(time.Second) // exp is whole seconds

	ws := gatewaytest.ConnectWS(t, g.URL, tok, gatewaytest.WSOptions{})
	ws.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
	if m := ws.Next(); m["type"] != "next" {
		t.Fatalf("before its exp the token's connection answers %v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, err = ws.Read(ctx)
	}
	closed := time.Now()
	if code := websocket.CloseStatus(err); code != server.CloseTokenExpired {
		t.Fatalf("the connection of an expired OpenIM token ended with %v (%v after its exp), want close code %d at its exp",
			err, closed.Sub(exp), server.CloseTokenExpired)
	}
	if late := closed.Sub(exp); late < -50*time.Millisecond || late > time.Second {
		t.Errorf("closed %v after the token's exp, want within a second after it", late)
	}
	resp := g.Post(tok, `{ viewer { userID } }`, nil)
	if len(resp.Errors) == 0 || resp.Errors[0].Extensions["code"] != "UNAUTHENTICATED" || strings.Contains(string(resp.Data), bob) {
		t.Errorf("the expired token over HTTP: %s %+v, want UNAUTHENTICATED and no viewer", resp.Data, resp.Errors)
	}
}

// ---- What the embedded default and a real store show a stranger ----

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

	// The same token in the upgrade request's header could not be checked either: the client
	// is told to come back, not that its token is bad (which would make it drop the token).
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	byHeader := gatewaytest.DialWS(t, url, gatewaytest.WSOptions{Header: h})
	byHeader.Write(map[string]any{"type": "connection_init"})
	if _, err := byHeader.Read(ctx); websocket.CloseStatus(err) != 1013 {
		t.Errorf("a connection whose header token could not be checked was closed with %v, want 1013 (try again later)", err)
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

// ---- What a client can make the gateway store or run ----

// Attacks on the transport: what a client can make the gateway store or run by the way it
// sends its operations (persisted queries, WebSocket, fragments).

// apqExtensions are the extensions of an APQ request for query.
func apqExtensions(query string) map[string]any {
	sum := sha256.Sum256([]byte(query))
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
}

// persistedKeys are the persisted queries g's Redis holds.
func persistedKeys(t *testing.T, g *gatewaytest.Gateway) []string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: g.Redis.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	iter := rdb.Scan(ctx, 0, "msggate:apq:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// wsAnswer reads the answer to operation id on ws: its errors, whether it came as "next"
// (with data) or "error", then its "complete" when it has one.
func wsAnswer(t *testing.T, ws *gatewaytest.WS, id string) []gatewaytest.Error {
	t.Helper()
	m := ws.Next()
	if m["id"] != id {
		t.Fatalf("answer %v, want one to %s", m, id)
	}
	b, _ := json.Marshal(m["payload"])
	var errs []gatewaytest.Error
	switch m["type"] {
	case "next":
		var r gatewaytest.Response
		_ = json.Unmarshal(b, &r)
		errs = r.Errors
		if done := ws.Next(); done["type"] != "complete" || done["id"] != id {
			t.Fatalf("after the answer to %s: %v, want its complete", id, done)
		}
	case "error":
		_ = json.Unmarshal(b, &errs)
	default:
		t.Fatalf("answer to %s: %v", id, m)
	}
	return errs
}

// Ensure a query sent with its hash that does not parse, or does not validate, gets its usual
// error and leaves nothing in Redis: before the fix every text with a matching hash was kept
// for a day, parsed or not.
func TestAbuseUnparsablePersistedQuery(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	for _, c := range []struct{ query, code string }{
		{strings.Repeat("junk ", 1000), "GRAPHQL_PARSE_FAILED"},
		{`{ viewer { userID ` + strings.Repeat("x", 5000), "GRAPHQL_PARSE_FAILED"},
		{`{ viewer { secrets } }`, "GRAPHQL_VALIDATION_FAILED"},
		{`{ conversation { id } }`, "GRAPHQL_VALIDATION_FAILED"},
	} {
		_, r := g.PostBody(alice, requestBody(c.query, nil, apqExtensions(c.query)))
		if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != c.code {
			t.Errorf("%.30q: %+v, want %s", c.query, r.Errors, c.code)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 0 {
		t.Errorf("Redis holds %d persisted queries that never parsed or validated: %v", len(keys), keys)
	}
	// A query that does run is still kept.
	const valid = `{ viewer { userID } }`
	if _, r := g.PostBody(alice, requestBody(valid, nil, apqExtensions(valid))); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if keys := persistedKeys(t, g); len(keys) != 1 {
		t.Errorf("after a valid query: %v, want it kept", keys)
	}
}

// Ensure one user cannot fill Redis with persisted queries: past the bound on what one user
// registers (count and bytes), queries still run but are not kept, and another user still
// registers theirs.
func TestAbusePersistedQueryFlood(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.RateLimit = -1
		c.Handler.PersistedQueriesPerUser = 5
		c.Handler.PersistedQueryBytesPerUser = 8 << 10
	})
	mallory := g.Token("mallory")
	var sent int
	for i := range 20 {
		q := fmt.Sprintf(`{ v%d: viewer { userID } }`, i)
		_, r := g.PostBody(mallory, requestBody(q, nil, apqExtensions(q)))
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data), "mallory") {
			t.Fatalf("query %d: %s %+v, want it answered", i, r.Data, r.Errors)
		}
		sent += len(q)
	}
	if keys := persistedKeys(t, g); len(keys) != 5 {
		t.Errorf("one user registered %d queries of 20, want the bound of 5", len(keys))
	}

	// Bytes: a user with room in count is bounded by what the queries weigh.
	padded := func(i int) string { // about 3 KiB, in a comment the parser skips
		return fmt.Sprintf("# %s\n{ p%d: viewer { userID } }", strings.Repeat("x", 3<<10), i)
	}
	trudy := g.Token("trudy")
	for i := range 4 {
		q := padded(i)
		if _, r := g.PostBody(trudy, requestBody(q, nil, apqExtensions(q))); len(r.Errors) > 0 {
			t.Fatalf("padded query %d: %+v", i, r.Errors)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 5+2 {
		t.Errorf("after 4 queries of 3 KiB within 8 KiB: %d kept, want mallory's 5 and 2 of them", len(keys))
	}

	alice := g.Token("alice")
	const mine = `{ viewer { userID totalUnread } }`
	if _, r := g.PostBody(alice, requestBody(mine, nil, apqExtensions(mine))); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if _, r := g.PostBody(alice, requestBody("", nil, apqExtensions(mine))); len(r.Errors) > 0 {
		t.Errorf("another user's query, by its hash alone: %+v", r.Errors)
	}
}

// Ensure a client over its rate on a WebSocket is refused before its operation is read: a
// persisted query it sends is not stored, and even one that does not parse is answered with
// the rate limit, not a parse error (the parsing is work it must not cause).
func TestAbusePersistedQueryOverRateOnWebSocket(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit, c.Handler.RateBurst = 0.001, 2 })
	ws := gatewaytest.ConnectWS(t, g.URL, g.Token("mallory"), gatewaytest.WSOptions{})
	for i := range 2 {
		id := fmt.Sprint("within-", i)
		ws.Write(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
		if errs := wsAnswer(t, ws, id); len(errs) > 0 {
			t.Fatalf("operation %d of a burst of 2: %+v", i, errs)
		}
	}
	for _, q := range []string{`{ a: viewer { userID } }`, `{ viewer { userID ` + strings.Repeat("x", 60<<10)} {
		ws.Write(map[string]any{"id": "over", "type": "subscribe", "payload": map[string]any{"query": q, "extensions": apqExtensions(q)}})
		errs := wsAnswer(t, ws, "over")
		if len(errs) == 0 || errs[0].Extensions["code"] != "LIMIT_EXCEEDED" || errs[0].Extensions["limit"] != "rate" {
			t.Errorf("%.30q over the rate: %+v, want the rate limit", q, errs)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 0 {
		t.Errorf("Redis holds %v, stored for a client over its rate", keys)
	}
}

// Ensure a catch-up read wrapped in fragments at the root is held to the store's admission as
// the plain field is: with the only turn at the store taken by a send that hangs there, it is
// refused at once with 503, not let through to queue at the store.
func TestAbuseCatchUpReadInFragmentsSkipsAdmission(t *testing.T) {
	gate := newStoreGate()
	g := gatewaytest.StartObserved(t, gateway.Observers{OnMongoCommand: gate.hold}, func(c *gateway.Config) {
		c.StoreRequests = 1
		c.Handler.RequestTimeout = 10 * time.Second
		c.Handler.RateLimit = -1
	})
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})

	gate.close()
	var stuck sync.WaitGroup
	stuck.Go(func() {
		r := g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "held"}})
		if len(r.Errors) > 0 {
			t.Errorf("the held send failed once the store answered: %+v", r.Errors)
		}
	})
	defer stuck.Wait()
	defer gate.reopen()
	gatewaytest.WaitFor(t, 10*time.Second, "the send does not take its turn", func() bool {
		return g.StoreRequests.Stats().InFlight == 1
	})
	// Its turn is held past the longest wait: what needs the store now cannot get in.
	time.Sleep(1200 * time.Millisecond)
	for _, q := range []string{
		`{ ...F } fragment F on Query { syncState(first: 10) { token } }`,
		`{ ... on Query { ... { syncState(first: 10) { token } } } }`,
		`{ ...A } fragment A on Query { ...B } fragment B on Query { syncState(first: 10) { token } }`,
	} {
		began := time.Now()
		resp, r, err := gatewaytest.Call(g.URL, alice, "", q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 1500*time.Millisecond {
			t.Errorf("%s: answered after %v, want at once", q, took)
		}
		refusedAtOnce(t, q, resp, r)
	}
}

// ---- A member who takes another member's clientMsgID ----

// A client picks its clientMsgID, and a group member sees the others' IDs. These play a member
// who sends with another member's ID, which must neither take the other's seq nor cost the
// other's retry its seq.

// msgIDGroup makes the group "team" of bob and carol, as an admin does, over HTTP.
func msgIDGroup(t *testing.T, g *gatewaytest.Gateway) {
	t.Helper()
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{
		{"userID": "bob", "role": "OWNER"}, {"userID": "carol"}}}, &struct{}{})
}

// sendWithID sends content into the group as token's user under clientMsgID.
func sendWithID(g *gatewaytest.Gateway, token, clientMsgID, content string) gatewaytest.Message {
	g.T.Helper()
	return g.SendGQL(token, map[string]any{"groupID": "team", "contentType": 101, "content": content, "clientMsgID": clientMsgID})
}

// groupHolds fails unless the group's seqs 1, 2, ... hold exactly the given messages (sender,
// content) as a member reads them and as the store has them, and nothing after them.
func groupHolds(t *testing.T, g *gatewaytest.Gateway, token string, want ...[2]string) {
	t.Helper()
	const conv = "sg_team"
	seqs := make([]int64, len(want))
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(token, gatewaytest.MessagesQuery, map[string]any{"c": conv, "s": seqs}, &out)
	for i, w := range want {
		if i >= len(out.Messages) {
			t.Fatalf("seq %d was not answered: %+v", i+1, out.Messages)
		}
		m := out.Messages[i]
		if m.SendID == nil || m.Content == nil || *m.SendID != w[0] || *m.Content != w[1] {
			t.Errorf("seq %d reads %+v, want %q by %s", i+1, m, w[1], w[0])
		}
	}
	if c := g.Conversation(token, conv); c.MaxSeq != int64(len(want)) {
		t.Errorf("the group's max seq is %d, want %d", c.MaxSeq, len(want))
	}
	after := int64(len(want) + 1)
	chunks, err := g.Store.FindChunks(context.Background(), []string{im.DocID(conv, after)})
	if err != nil {
		t.Fatal(err)
	}
	if s := chunks[0].Slot(after); s != nil && s.Msg != nil {
		t.Errorf("the store holds %q by %s at seq %d: a message was stored twice", s.Msg.Content, s.Msg.SendID, after)
	}
}

// Ensure a member who sends with another member's clientMsgID gets a seq of their own, not the
// other's message, and the other's retry still gets its original seq: the group holds two
// messages.
func TestAbuseClientMsgIDOfAnotherMember(t *testing.T) {
	g := gatewaytest.Start(t)
	msgIDGroup(t, g)
	bob, carol := g.Token("bob"), g.Token("carol")
	if m := sendWithID(g, bob, "X", "bob's"); m.Seq != 1 {
		t.Fatalf("bob's send went to seq %d, want 1", m.Seq)
	}
	if m := sendWithID(g, carol, "X", "carol's"); m.Seq != 2 {
		t.Fatalf("carol's send with bob's clientMsgID went to seq %d, want a new seq 2", m.Seq)
	}
	if m := sendWithID(g, bob, "X", "bob's"); m.Seq != 1 {
		t.Fatalf("bob's retry went to seq %d, want his seq 1", m.Seq)
	}
	groupHolds(t, g, bob, [2]string{"bob", "bob's"}, [2]string{"carol", "carol's"})
}

// Ensure the same after an upgrade, for a send that the earlier version recorded without its
// sender: another member's send with its clientMsgID does not take its seq, and its sender's
// retry still does.
func TestAbuseClientMsgIDOfAnotherMemberAfterAnUpgrade(t *testing.T) {
	m, rs := testenv.Mongo(t), testenv.Redis(t)
	cfg := gatewaytest.Config(rs.URL(), m)
	before := gatewaytest.New(t, cfg)
	msgIDGroup(t, before)
	if got := sendWithID(before, before.Token("bob"), "X", "bob's"); got.Seq != 1 {
		t.Fatalf("bob's send went to seq %d, want 1", got.Seq)
	}
	// The store as the earlier version left it: bob's claim keyed by conversation and
	// clientMsgID alone, under the natural _id that version gave it.
	ctx := context.Background()
	db := m.Connect(t, nil)
	if _, err := db.Collection(chunkstore.CollectionClientMsgKey).DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	old := bson.D{{Key: "conversation_id", Value: "sg_team"}, {Key: "client_msg_id", Value: "X"}, {Key: "seq", Value: int64(1)}}
	if _, err := db.Collection(chunkstore.CollectionClientMsgID).ReplaceOne(ctx, bson.D{{Key: "_id", Value: "sg_team|X"}}, old,
		options.Replace().SetUpsert(true)); err != nil {
		t.Fatal(err)
	}

	g := gatewaytest.New(t, cfg) // the upgraded gateway, on the same stores
	bob, carol := g.Token("bob"), g.Token("carol")
	if got := sendWithID(g, carol, "X", "carol's"); got.Seq != 2 {
		t.Fatalf("carol's send with bob's clientMsgID went to seq %d, want a new seq 2", got.Seq)
	}
	if got := sendWithID(g, bob, "X", "bob's"); got.Seq != 1 {
		t.Fatalf("bob's retry went to seq %d, want his seq 1", got.Seq)
	}
	if got := sendWithID(g, carol, "X", "carol's"); got.Seq != 2 {
		t.Fatalf("carol's retry went to seq %d, want her seq 2", got.Seq)
	}
	groupHolds(t, g, carol, [2]string{"bob", "bob's"}, [2]string{"carol", "carol's"})
}

// ---- What a sync client keeps, or makes the gateway do ----

// abuseCheck is how often the gateways of these tests check live subscriptions' groups.
const abuseCheck = 200 * time.Millisecond

// nextGroupEvent reads c's events until one of conversation conv of type kind, and fails the
// test when none comes before ctx ends.
func nextGroupEvent(t *testing.T, ctx context.Context, c *gatewaytest.WS, kind, conv string) {
	t.Helper()
	for {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no %s of %s: %v", kind, conv, err)
		}
		p, _ := m["payload"].(map[string]any)
		data, _ := p["data"].(map[string]any)
		ev, _ := data["syncEvents"].(map[string]any)
		if ev["type"] == kind && ev["conversationID"] == conv {
			return
		}
	}
}

// A member removed from a group keeps their WebSocket subscription open, and the hint that
// should have made it re-read its groups is lost (the writer of the removal died before
// giving it): the subscription still gets LEAVE within a few membership checks, and none of
// the group's later messages, which its remaining member does get.
func TestAbuseRemovedMemberKeepsGroupStream(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.MembershipCheck = abuseCheck
		c.Handler.RateLimit = -1
	})
	ctx := context.Background()
	crew := []im.GroupMember{{UserID: "ann", Role: im.RoleOwner}, {UserID: "ben", Role: im.RoleMember}}
	if err := g.Ledger.SetGroup(ctx, "crew", crew); err != nil {
		t.Fatal(err)
	}
	ann, ben := dialFromNow(t, g, "ann"), dialFromNow(t, g, "ben")
	gatewaytest.WaitFor(t, 20*time.Second, "both members stream live", func() bool { return g.Hub.LiveSubscribers() == 2 })
	g.Send("ann", "", "crew", 1)
	for _, c := range []*gatewaytest.WS{ann, ben} {
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		nextGroupEvent(t, readCtx, c, "NEW_MESSAGE", "sg_crew")
		cancel()
	}

	dying := imsync.NewLedger(g.Store, g.Cache, imsync.Options{Fault: func(step string) error {
		if step == "resync" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	if err := dying.SetGroup(ctx, "crew", crew[:1]); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("removing ben: %v, want the writer stopped before the hint", err)
	}
	leaveCtx, cancel := context.WithTimeout(ctx, 10*abuseCheck)
	nextGroupEvent(t, leaveCtx, ben, "LEAVE", "sg_crew")
	cancel()

	g.Send("ann", "", "crew", 1)
	annCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nextGroupEvent(t, annCtx, ann, "NEW_MESSAGE", "sg_crew")
	cancel()
	quiet, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		m, err := ben.Read(quiet)
		if err != nil {
			break // nothing more within the second
		}
		// The group has two streams, its chat and its notifications: a later check may tell
		// ben he left the other one too. Nothing else of the group may reach him.
		p, _ := m["payload"].(map[string]any)
		data, _ := p["data"].(map[string]any)
		ev, _ := data["syncEvents"].(map[string]any)
		if ev["type"] == "LEAVE" && (ev["conversationID"] == "sg_crew" || ev["conversationID"] == "n_sg_crew") {
			continue
		}
		if strings.Contains(fmt.Sprint(m), "sg_crew") {
			t.Fatalf("ben, removed, still got %v", m)
		}
	}
	// Ben's subscription stays open; once ann's ends, nothing here follows the group, and the
	// gateway stops listening on its channel.
	_ = ann.Conn.CloseNow()
	rdb := redis.NewClient(&redis.Options{Addr: g.Redis.Addr()})
	defer rdb.Close()
	gatewaytest.WaitFor(t, 10*time.Second, "the gateway stops listening on sg_crew", func() bool {
		numsub, err := rdb.Do(ctx, "PUBSUB", "NUMSUB", g.Cache.GroupChannel("sg_crew")).Slice()
		return err == nil && numsub[1].(int64) == 0
	})
}

// A client forges a sync token that names 10,000 group streams (the most a token may), one of
// them a group with messages it is not in: each page answers at most limit events, all LEAVEs
// and none of the group's messages, and paging ends at the client's own head.
func TestAbuseForgedSyncTokenLeaves(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit = -1 })
	ctx := context.Background()
	if err := g.Ledger.SetGroup(ctx, "secret", []im.GroupMember{{UserID: "x", Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	g.Send("x", "", "secret", 3)
	g.Send("x", "mallory", "", 1)
	head := syncToken(g, "mallory")
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(",sg_secret=0.0")
	forged := 1
	for ; forged+strings.Count(head, ",") < im.MaxSyncTokenGroups; forged++ {
		fmt.Fprintf(&b, ",sg_f%05d=1.0", forged)
	}
	mallory := g.Token("mallory")

	first := difference(g, mallory, b.String(), 100)
	if n := len(first.SyncDifference.Events); n > 100 || !first.SyncDifference.HasMore {
		t.Fatalf("a page of limit 100 from a forged token: %d events, hasMore %v; want at most 100, and more",
			n, first.SyncDifference.HasMore)
	}
	left := map[string]int{}
	since := b.String()
	for pages := 0; ; pages++ {
		if pages > forged/1000+2 {
			t.Fatalf("paging a forged token of %d streams did not end in %d pages", forged, pages)
		}
		d := difference(g, mallory, since, 1000).SyncDifference
		if len(d.Events) > 1000 {
			t.Fatalf("a page of limit 1000 holds %d events", len(d.Events))
		}
		for _, ev := range d.Events {
			if ev.ConversationID != nil && strings.HasPrefix(*ev.ConversationID, "sg_") {
				if ev.Type != "LEAVE" {
					t.Fatalf("from the forged token: %s of %s, want LEAVE only", ev.Type, *ev.ConversationID)
				}
				left[*ev.ConversationID]++
			}
		}
		since = d.Token
		if !d.HasMore {
			break
		}
	}
	if len(left) != forged {
		t.Errorf("LEAVEs of %d streams, want %d", len(left), forged)
	}
	for id, n := range left {
		if n != 1 {
			t.Errorf("%s: %d LEAVEs, want 1", id, n)
		}
	}
	if strings.Contains(since, "sg_") {
		t.Errorf("the last token still follows group streams: %.200s", since)
	}
}
