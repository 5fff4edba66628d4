package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/testenv"
)

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
	if code := websocket.CloseStatus(err); code != graph.CloseTokenExpired {
		t.Fatalf("the connection of an expired OpenIM token ended with %v (%v after its exp), want close code %d at its exp",
			err, closed.Sub(exp), graph.CloseTokenExpired)
	}
	if late := closed.Sub(exp); late < -50*time.Millisecond || late > time.Second {
		t.Errorf("closed %v after the token's exp, want within a second after it", late)
	}
	resp := g.Post(tok, `{ viewer { userID } }`, nil)
	if len(resp.Errors) == 0 || resp.Errors[0].Extensions["code"] != "UNAUTHENTICATED" || strings.Contains(string(resp.Data), bob) {
		t.Errorf("the expired token over HTTP: %s %+v, want UNAUTHENTICATED and no viewer", resp.Data, resp.Errors)
	}
}
