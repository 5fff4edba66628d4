package auth

import (
	"context"
	"sync"
	"time"
)

// Authenticator turns the token a client presents into the viewer it belongs to. Every
// refusal is EUNAUTHENTICATED; a failure to check (a store that does not answer) carries its
// own code, so that it is not mistaken for a bad token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Viewer, error)
}

// HS256 authenticates msggate's own tokens, signed with secret (see Verify). It reads no store.
// Nothing but the secret and the clock decides such a token's answer, so a token it accepted is
// remembered until its expiry (verifiedTokens): a client's every request does not pay again
// for the HMAC and the claims' JSON.
func HS256(secret []byte) Authenticator {
	return &hs256{secret: secret, verified: verifiedTokens{max: maxVerifiedTokens}}
}

type hs256 struct {
	secret   []byte
	verified verifiedTokens
}

// Authenticate answers a remembered token from memory and verifies any other (Verify).
func (a *hs256) Authenticate(_ context.Context, token string) (Viewer, error) {
	now := time.Now()
	if v, ok := a.verified.get(token, now); ok {
		return v, nil
	}
	v, err := Verify(a.secret, token)
	if err == nil {
		a.verified.add(token, v, now)
	}
	return v, err
}

// maxVerifiedTokens bounds the tokens one HS256 remembers: about 5 MB of tokens.
const maxVerifiedTokens = 16384

// verifiedTokens remembers accepted tokens' viewers until the tokens expire. When full, an
// arbitrary token makes room (expired ones too, in time): a forgotten token is only verified
// again.
type verifiedTokens struct {
	mu     sync.RWMutex
	max    int
	tokens map[string]Viewer
}

func (t *verifiedTokens) get(token string, now time.Time) (Viewer, bool) {
	t.mu.RLock()
	v, ok := t.tokens[token]
	t.mu.RUnlock()
	if !ok || !now.Before(v.Expires) {
		return Viewer{}, false // an expired token is verified again, and refused
	}
	return v, true
}

func (t *verifiedTokens) add(token string, v Viewer, now time.Time) {
	if !now.Before(v.Expires) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tokens == nil {
		t.tokens = make(map[string]Viewer)
	}
	for old := range t.tokens {
		if len(t.tokens) < t.max {
			break
		}
		delete(t.tokens, old)
	}
	t.tokens[token] = v
}

// TokenVerifier checks a token issued by another system and returns its user ID and its
// expiry, zero when it has none (the OpenIM adapter's VerifyToken is one).
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (userID string, expires time.Time, err error)
}

// UserTokens authenticates the tokens v verifies. Their viewers are plain users: no token of
// another system makes a msggate admin. A viewer expires with its token, so a WebSocket
// connection it opened is closed then, whatever the other system says of the token until.
func UserTokens(v TokenVerifier) Authenticator { return userTokens{v} }

type userTokens struct{ v TokenVerifier }

func (u userTokens) Authenticate(ctx context.Context, token string) (Viewer, error) {
	user, expires, err := u.v.VerifyToken(ctx, token)
	if err != nil {
		return Viewer{}, err
	}
	return Viewer{UserID: user, Expires: expires}, nil
}

// SessionChecker is an Authenticator whose tokens can be withdrawn before they expire
// (OpenIM's: kicked, logged out, replaced). A connection that outlives its authentication
// asks it again from time to time, so that it does not outlive its token either.
type SessionChecker interface {
	// Active reports, aligned with tokens, whether each is still good. An error says nothing
	// of any of them (the store could not be asked).
	Active(ctx context.Context, tokens []string) ([]bool, error)
}

// TokenStatusReader is a TokenVerifier that can tell, many at once, whether tokens it
// verified are still good.
type TokenStatusReader interface {
	TokensActive(ctx context.Context, tokens []string) ([]bool, error)
}

// Active asks the verifier, when it can tell; otherwise a verified token stays good until it
// expires.
func (u userTokens) Active(ctx context.Context, tokens []string) ([]bool, error) {
	if r, ok := u.v.(TokenStatusReader); ok {
		return r.TokensActive(ctx, tokens)
	}
	out := make([]bool, len(tokens))
	for i := range out {
		out[i] = true
	}
	return out, nil
}
