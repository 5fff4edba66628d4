package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
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
