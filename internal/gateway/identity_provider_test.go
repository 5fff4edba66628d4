package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// identityProvider is an identity provider of the test's own: an ES256 key, published as a
// JWKS file.
type identityProvider struct {
	key  *ecdsa.PrivateKey
	jwks string // the file
}

func newIdentityProvider(t *testing.T) identityProvider {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": "idp-1", "use": "sig", "x": enc(pub[1:33]), "y": enc(pub[33:])}}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return identityProvider{key: key, jwks: path}
}

// token signs a token for user as the provider would; edit changes its claims first.
func (p identityProvider) token(t *testing.T, user string, edit func(jwt.MapClaims)) string {
	t.Helper()
	c := jwt.MapClaims{"sub": user, "iss": "https://id.example.com/", "aud": "msggate", "exp": time.Now().Add(time.Hour).Unix()}
	if edit != nil {
		edit(c)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "idp-1"
	s, err := tok.SignedString(p.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Ensure a gateway configured with an identity provider accepts its tokens over HTTP and in
// connection_init, beside msggate's own, and refuses its bad ones (UNAUTHENTICATED, close
// code 4403); and that a provider whose keys cannot be read stops the start.
func TestIdentityProviderTokens(t *testing.T) {
	idp := newIdentityProvider(t)
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.IdentityProvider = gateway.IdentityProviderConfig{JWKS: idp.jwks, Issuer: "https://id.example.com/", Audience: "msggate"}
	})
	alice := idp.token(t, "alice", nil)
	const viewer = `{ viewer { userID } }`

	var out struct{ Viewer struct{ UserID string } }
	g.Query(alice, viewer, nil, &out)
	if out.Viewer.UserID != "alice" {
		t.Fatalf("viewer with the provider's token: %+v", out)
	}
	g.Query(g.Token("bob"), viewer, nil, &out)
	if out.Viewer.UserID != "bob" {
		t.Fatalf("viewer with msggate's own token: %+v", out)
	}
	for name, tok := range map[string]string{
		"expired":          idp.token(t, "alice", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() }),
		"another audience": idp.token(t, "alice", func(c jwt.MapClaims) { c["aud"] = "other" }),
		"another issuer":   idp.token(t, "alice", func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" }),
	} {
		if code := g.ErrorCode(tok, viewer, nil); code != "UNAUTHENTICATED" {
			t.Errorf("%s: %s, want UNAUTHENTICATED", name, code)
		}
	}

	// Over WebSocket: alice (the provider's token) hears bob's message live.
	ws := gatewaytest.ConnectWS(t, g.URL, alice, gatewaytest.WSOptions{})
	ws.Subscribe(nil)
	gatewaytest.WaitFor(t, 10*time.Second, "alice's subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
	sent := g.SendGQL(g.Token("bob"), map[string]any{"recvID": "alice", "contentType": 101, "content": "hello"})
	if ev := ws.NextEvent(); ev.Type != "NEW_MESSAGE" || ev.Seq == nil || *ev.Seq != sent.Seq {
		t.Fatalf("alice's event %+v, want NEW_MESSAGE at %d", ev, sent.Seq)
	}
	bad := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})
	if code := initAndWaitForClose(t, bad, idp.token(t, "alice", func(c jwt.MapClaims) { delete(c, "exp") })); code != websocket.StatusCode(4403) {
		t.Errorf("connection_init with a token without exp: close status %d, want 4403", code)
	}

	t.Run("keys that cannot be read stop the start", func(t *testing.T) {
		cfg := gatewaytest.Config(g.Redis.URL(), testenv.Mongo(t))
		cfg.IdentityProvider = gateway.IdentityProviderConfig{JWKS: filepath.Join(t.TempDir(), "missing.json"), Audience: "msggate"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m, err := gateway.Open(ctx, cfg, gatewaytest.Logger(t))
		if err == nil {
			_ = m.Close()
			t.Fatal("a gateway started with a JWKS it cannot read")
		}
		if !strings.Contains(err.Error(), "-jwks") {
			t.Errorf("the error does not name the flag: %v", err)
		}
	})
}
