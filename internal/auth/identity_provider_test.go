package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

// idpKeys are an identity provider's signing keys, made by the test.
type idpKeys struct {
	rsa, rsa2, outsider *rsa.PrivateKey
	ec                  *ecdsa.PrivateKey
}

var (
	keysOnce sync.Once
	keys     idpKeys
)

func testKeys(t *testing.T) idpKeys {
	t.Helper()
	keysOnce.Do(func() {
		gen := func() *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			return k
		}
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		keys = idpKeys{rsa: gen(), rsa2: gen(), outsider: gen(), ec: ec}
	})
	return keys
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PublicKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PublicKey) map[string]any {
	b, err := k.Bytes() // 0x04 || x || y
	if err != nil {
		panic(err)
	}
	size := (len(b) - 1) / 2
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(b[1 : 1+size]), "y": b64(b[1+size:])}
}

func jwksDoc(keys ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// sign makes a token with the given header algorithm, key ID and claims.
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jwksServer serves a key set over HTTPS and counts its fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     []byte
	status  int
	delay   time.Duration // before each answer
	fetches atomic.Int64
}

func serveJWKS(t *testing.T, doc []byte) *jwksServer {
	s := &jwksServer{doc: doc, status: http.StatusOK}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc, status, delay := s.doc, s.status, s.delay
		s.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(doc)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(doc []byte, status int) {
	s.mu.Lock()
	s.doc, s.status = doc, status
	s.mu.Unlock()
}

func (s *jwksServer) slow(delay time.Duration) {
	s.mu.Lock()
	s.delay = delay
	s.mu.Unlock()
}

const (
	issuer   = "https://id.example.com/"
	audience = "msggate"
)

func provider(t *testing.T, s *jwksServer, tune func(*auth.IdentityProviderOptions)) *auth.IdentityProvider {
	t.Helper()
	opts := auth.IdentityProviderOptions{JWKS: s.URL + "/jwks.json", HTTPClient: s.Client(), Issuer: issuer, Audience: audience}
	if tune != nil {
		tune(&opts)
	}
	p, err := auth.NewIdentityProvider(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// claims are a valid token's claims for user, changed by edit.
func claims(user string, edit func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"sub": user, "iss": issuer, "aud": []string{"other", audience},
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if edit != nil {
		edit(c)
	}
	return c
}

// Ensure RS256 and ES256 tokens signed with the published keys are accepted, with the user
// taken from the configured claim, and that every kind of bad token is refused as
// unauthenticated.
func TestIdentityProviderTokens(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey), ecJWK("ec1", &k.ec.PublicKey)))
	p := provider(t, s, nil)
	ctx := context.Background()

	accepted := map[string]string{
		"RS256":                           sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", nil)),
		"ES256":                           sign(t, jwt.SigningMethodES256, k.ec, "ec1", claims("bob", nil)),
		"nbf within the clock skew":       sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("carol", func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(30 * time.Second).Unix() })),
		"audience as a single string":     sign(t, jwt.SigningMethodES256, k.ec, "ec1", claims("dave", func(c jwt.MapClaims) { c["aud"] = audience })),
		"no kid, one key for this method": sign(t, jwt.SigningMethodES256, k.ec, "", claims("erin", nil)),
	}
	for name, tok := range accepted {
		v, err := p.Authenticate(ctx, tok)
		if err != nil || v.UserID == "" || v.Admin {
			t.Errorf("%s: %+v, %v; want a plain user", name, v, err)
		}
		// A connection it authenticates is closed at its exp.
		if d := time.Until(v.Expires); d < 58*time.Minute || d > time.Hour {
			t.Errorf("%s: Expires %v, want the token's exp, an hour from now", name, v.Expires)
		}
	}

	none := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(mustJSON(claims("alice", nil))) + "."
	refused := map[string]string{
		"alg none":               none,
		"HS256 (not configured)": sign(t, jwt.SigningMethodHS256, []byte("any-secret-0123456789abcdef0123"), "rsa1", claims("alice", nil)),
		"RS384 (not configured)": sign(t, jwt.SigningMethodRS384, k.rsa, "rsa1", claims("alice", nil)),
		"no exp":                 sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { delete(c, "exp") })),
		"exp passed":             sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Second).Unix() })),
		"nbf beyond the skew":    sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })),
		"another issuer":         sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" })),
		"no issuer":              sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { delete(c, "iss") })),
		"another audience":       sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["aud"] = "someone-else" })),
		"key not in the set":     sign(t, jwt.SigningMethodRS256, k.outsider, "outsider", claims("alice", nil)),
		"kid of another key":     sign(t, jwt.SigningMethodRS256, k.outsider, "rsa1", claims("alice", nil)),
		"RSA kid, EC algorithm":  sign(t, jwt.SigningMethodES256, k.ec, "rsa1", claims("alice", nil)),
		"no user":                sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { delete(c, "sub") })),
		"invalid user ID":        sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("auth0|123", nil)),
		"tampered payload":       tamper(sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", nil))),
		"garbage":                "x.y.z",
		"empty":                  "",
	}
	for name, tok := range refused {
		if v, err := p.Authenticate(ctx, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
			t.Errorf("%s: %+v, %v; want EUNAUTHENTICATED", name, v, err)
		}
	}

	t.Run("user claim", func(t *testing.T) {
		p := provider(t, s, func(o *auth.IdentityProviderOptions) { o.UserClaim = "preferred_username" })
		tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("auth0|123", func(c jwt.MapClaims) { c["preferred_username"] = "frank" }))
		if v, err := p.Authenticate(ctx, tok); err != nil || v.UserID != "frank" {
			t.Errorf("%+v, %v; want frank", v, err)
		}
	})
}

// Ensure an unknown key ID reads the key set again (a rotation is picked up), at most once per
// MinRefresh however many such tokens come; keys that cannot be read answer EUNAVAILABLE,
// the keys read before still verify, and a slow provider is given up on after the timeout.
func TestIdentityProviderKeyRefresh(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)))
	const minRefresh = time.Second
	p := provider(t, s, func(o *auth.IdentityProviderOptions) { o.MinRefresh = minRefresh })
	ctx := context.Background()
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}
	rotated := sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa2", claims("alice", nil))
	var forged []string
	for i := range 20 {
		forged = append(forged, sign(t, jwt.SigningMethodRS256, k.outsider, "made-up-"+string(rune('a'+i)), claims("alice", nil)))
	}

	s.set(jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey), rsaJWK("rsa2", &k.rsa2.PublicKey)), http.StatusOK)
	if _, err := p.Authenticate(ctx, rotated); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Fatalf("a new key right after a read: %v, want refused until MinRefresh has passed", err)
	}
	time.Sleep(minRefresh)
	if v, err := p.Authenticate(ctx, rotated); err != nil || v.UserID != "alice" {
		t.Fatalf("a token of the new key: %+v, %v", v, err)
	}
	for _, tok := range forged {
		if _, err := p.Authenticate(ctx, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
			t.Fatalf("made-up key ID: %v", err)
		}
	}
	if n := s.fetches.Load(); n != 2 {
		t.Errorf("%d fetches after a rotation and 20 made-up key IDs, want 2 (start, rotation)", n)
	}

	time.Sleep(minRefresh)
	s.set([]byte("down"), http.StatusInternalServerError)
	unknown := sign(t, jwt.SigningMethodRS256, k.outsider, "rsa3", claims("alice", nil))
	if _, err := p.Authenticate(ctx, unknown); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Errorf("an unknown key while the provider fails: %v, want EUNAVAILABLE", err)
	}
	if v, err := p.Authenticate(ctx, rotated); err != nil || v.UserID != "alice" {
		t.Errorf("a known key while the provider fails: %+v, %v", v, err)
	}

	t.Run("timeout", func(t *testing.T) {
		slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}))
		defer slow.Close()
		start := time.Now()
		_, err := auth.NewIdentityProvider(ctx, auth.IdentityProviderOptions{JWKS: slow.URL, HTTPClient: slow.Client(),
			Issuer: issuer, Audience: audience, Timeout: 200 * time.Millisecond})
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("a provider that never answers: %v after %v, want an error after about 200ms", err, time.Since(start))
		}
	})
}

// Ensure a client that hangs up while its unknown key ID has the keys read again does not make
// that read fail: the rotated key it brings in signs in at once, not after MinRefresh; and the
// requests that need the keys meanwhile share that one read.
func TestIdentityProviderKeyReadOutlivesClient(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)))
	const minRefresh, readTime = time.Second, 300 * time.Millisecond
	p := provider(t, s, func(o *auth.IdentityProviderOptions) { o.MinRefresh = minRefresh })
	s.set(jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey), rsaJWK("rsa2", &k.rsa2.PublicKey)), http.StatusOK)
	s.slow(readTime)
	time.Sleep(minRefresh) // since the start's read

	ctx, hangUp := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer hangUp()
	start := time.Now()
	made := sign(t, jwt.SigningMethodRS256, k.outsider, "made-up", claims("mallory", nil))
	if v, err := p.Authenticate(ctx, made); err == nil {
		t.Fatalf("a made-up key ID: %+v", v)
	}
	if d := time.Since(start); d >= readTime {
		t.Errorf("a client that hung up waited %v, the whole read", d)
	}

	rotated := sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa2", claims("alice", nil))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			v, err := p.Authenticate(context.Background(), rotated)
			if err == nil && v.UserID != "alice" {
				err = errors.New("signed in as " + v.UserID)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a token of the rotated key after a client hung up on the read: %v, want alice", err)
		}
	}
	if n := s.fetches.Load(); n != 2 {
		t.Errorf("%d reads of the key set, want 2 (the start, and the one all these requests shared)", n)
	}
}

// Ensure a flood of tokens with made-up key IDs, from clients that hang up at once, neither
// keeps a rotated key out (its tokens sign in within MinRefresh and one read of the rotation)
// nor reads the key set more than once per MinRefresh.
func TestIdentityProviderRotationUnderUnknownKeyFlood(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)))
	const minRefresh, readTime = 400 * time.Millisecond, 50 * time.Millisecond
	p := provider(t, s, func(o *auth.IdentityProviderOptions) { o.MinRefresh = minRefresh })
	s.slow(readTime)
	var made []string
	for i := range 16 {
		made = append(made, sign(t, jwt.SigningMethodRS256, k.outsider, fmt.Sprintf("made-up-%d", i), claims("mallory", nil)))
	}

	floodStart := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, hangUp := context.WithTimeout(context.Background(), time.Millisecond)
				_, _ = p.Authenticate(ctx, made[(i+n)%len(made)])
				hangUp()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	time.Sleep(2 * minRefresh)
	rotatedAt := time.Now()
	s.set(jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey), rsaJWK("rsa2", &k.rsa2.PublicKey)), http.StatusOK)
	rotated := sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa2", claims("alice", nil))
	deadline := rotatedAt.Add(minRefresh + 10*readTime + time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := p.Authenticate(ctx, rotated)
		cancel()
		if err == nil && v.UserID == "alice" {
			t.Logf("the rotated key signed in %v after the rotation", time.Since(rotatedAt))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated key is still refused %v after the rotation, during a flood of made-up key IDs: %v",
				time.Since(rotatedAt), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The start's read, then at most one per MinRefresh.
	if n, most := s.fetches.Load(), 2+int64(time.Since(floodStart)/minRefresh); n > most {
		t.Errorf("%d reads of the key set in %v, want at most %d (one per MinRefresh)", n, time.Since(floodStart), most)
	}
}

// Ensure a key set is read from a file too, and what cannot work is refused at start: a plain
// http:// URL, a file that is no key set, a set without usable keys, an unknown algorithm.
func TestIdentityProviderConfiguration(t *testing.T) {
	k := testKeys(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	jwksFile := write("jwks.json", jwksDoc(ecJWK("ec1", &k.ec.PublicKey)))
	// A key file is the operator's own: no issuer is required for it.
	p, err := auth.NewIdentityProvider(ctx, auth.IdentityProviderOptions{JWKS: jwksFile, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Authenticate(ctx, sign(t, jwt.SigningMethodES256, k.ec, "ec1", claims("alice", nil))); err != nil || v.UserID != "alice" {
		t.Errorf("a token checked against a key file: %+v, %v", v, err)
	}

	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	for name, opts := range map[string]auth.IdentityProviderOptions{
		"no JWKS":          {},
		"http URL":         {JWKS: "http://id.example.com/jwks.json"},
		"missing file":     {JWKS: filepath.Join(dir, "nope.json"), Audience: audience},
		"not a key set":    {JWKS: write("html", []byte("<html>")), Audience: audience},
		"only a short key": {JWKS: write("short.json", jwksDoc(rsaJWK("s", &small.PublicKey))), Audience: audience},
		"only an HMAC key": {JWKS: write("oct.json", jwksDoc(map[string]any{"kty": "oct", "k": "c2VjcmV0"})), Audience: audience},
		"unknown algorithm": {JWKS: write("ok.json", jwksDoc(ecJWK("ec1", &k.ec.PublicKey))),
			Audience: audience, Algorithms: []string{"HS256"}},
	} {
		if _, err := auth.NewIdentityProvider(ctx, opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Ensure a provider is refused at start without an audience (its keys sign the tokens of all
// its applications), and without an issuer when its keys come from a URL (they may sign for
// several issuers), unless the options say explicitly that any will do; and that then a token
// for another application signs in only when they do.
func TestIdentityProviderRequiresAudienceAndIssuer(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)))
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	url := s.URL + "/jwks.json"
	for name, tc := range map[string]struct {
		opts auth.IdentityProviderOptions
		want []error
	}{
		"URL, neither":      {auth.IdentityProviderOptions{JWKS: url}, []error{auth.ErrAudienceRequired, auth.ErrIssuerRequired}},
		"URL, no audience":  {auth.IdentityProviderOptions{JWKS: url, Issuer: issuer}, []error{auth.ErrAudienceRequired}},
		"URL, no issuer":    {auth.IdentityProviderOptions{JWKS: url, Audience: audience}, []error{auth.ErrIssuerRequired}},
		"file, no audience": {auth.IdentityProviderOptions{JWKS: file, Issuer: issuer}, []error{auth.ErrAudienceRequired}},
		"URL, any issuer":   {auth.IdentityProviderOptions{JWKS: url, AnyIssuer: true}, []error{auth.ErrAudienceRequired}},
		"URL, any audience": {auth.IdentityProviderOptions{JWKS: url, AnyAudience: true}, []error{auth.ErrIssuerRequired}},
	} {
		tc.opts.HTTPClient = s.Client()
		_, err := auth.NewIdentityProvider(ctx, tc.opts)
		for _, want := range tc.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", name, err, want)
			}
		}
	}
	if n := s.fetches.Load(); n != 0 {
		t.Errorf("refused options read the key set %d times, want never", n)
	}

	forOther := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["aud"] = "another-app" }))
	strict := provider(t, s, nil)
	if v, err := strict.Authenticate(ctx, forOther); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Errorf("a token for another application: %+v, %v; want EUNAUTHENTICATED", v, err)
	}
	anyAud := provider(t, s, func(o *auth.IdentityProviderOptions) { o.Audience, o.AnyAudience = "", true })
	if v, err := anyAud.Authenticate(ctx, forOther); err != nil || v.UserID != "alice" {
		t.Errorf("a token for another application with AnyAudience: %+v, %v; want alice", v, err)
	}
	otherIssuer := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", func(c jwt.MapClaims) { c["iss"] = "https://id.example.com/realms/other" }))
	anyIss := provider(t, s, func(o *auth.IdentityProviderOptions) { o.Issuer, o.AnyIssuer = "", true })
	if v, err := anyIss.Authenticate(ctx, otherIssuer); err != nil || v.UserID != "alice" {
		t.Errorf("a token of another issuer with AnyIssuer: %+v, %v; want alice", v, err)
	}
}

// Ensure msggate's own tokens and the provider's work side by side, and a token is checked
// only as the kind its algorithm names: an HS256 token whose secret is the provider's public
// key (the old algorithm-confusion attack) is refused.
func TestWithIdentityProvider(t *testing.T) {
	k := testKeys(t)
	s := serveJWKS(t, jwksDoc(rsaJWK("rsa1", &k.rsa.PublicKey)))
	both := auth.WithIdentityProvider(auth.HS256(secret), provider(t, s, nil))
	ctx := context.Background()
	own, _ := auth.Issue(secret, "root", true, time.Hour, time.Now())
	if v, err := both.Authenticate(ctx, own); err != nil || v.UserID != "root" || !v.Admin {
		t.Errorf("msggate's admin token: %+v, %v", v, err)
	}
	if v, err := both.Authenticate(ctx, sign(t, jwt.SigningMethodRS256, k.rsa, "rsa1", claims("alice", nil))); err != nil || v.UserID != "alice" || v.Admin {
		t.Errorf("the provider's token: %+v, %v", v, err)
	}
	pem := rsaJWK("rsa1", &k.rsa.PublicKey)["n"].(string)
	confused := sign(t, jwt.SigningMethodHS256, []byte(pem), "rsa1", claims("alice", nil))
	none := b64([]byte(`{"alg":"none"}`)) + "." + b64(mustJSON(claims("alice", nil))) + "."
	for name, tok := range map[string]string{"HS256 with the public key as secret": confused, "alg none": none} {
		if _, err := both.Authenticate(ctx, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
			t.Errorf("%s: %v, want EUNAUTHENTICATED", name, err)
		}
	}
}

// Ensure msggate's own HS256 tokens are refused without an expiry, when not yet valid, and
// when signed with another algorithm.
func TestVerifyRefusesClaimsAndAlgorithms(t *testing.T) {
	k := testKeys(t)
	now := time.Now()
	for name, tok := range map[string]string{
		"no exp":   sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{"sub": "alice"}),
		"nbf soon": sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(5 * time.Minute).Unix()}),
		"RS256":    sign(t, jwt.SigningMethodRS256, k.rsa, "", jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()}),
	} {
		if _, err := auth.Verify(secret, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
			t.Errorf("%s: err = %v, want EUNAUTHENTICATED", name, err)
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// tamper changes a signed token's payload, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = b64(mustJSON(claims("mallory", nil)))
	return strings.Join(parts, ".")
}
