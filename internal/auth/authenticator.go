package auth

import "context"

// Authenticator turns the token a client presents into the viewer it belongs to. Every
// refusal is EUNAUTHENTICATED; a failure to check (a store that does not answer) carries its
// own code, so that it is not mistaken for a bad token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Viewer, error)
}

// HS256 authenticates msggate's own tokens, signed with the secret it holds (see Verify). It
// reads no store.
type HS256 []byte

// Authenticate verifies token (Verify).
func (secret HS256) Authenticate(_ context.Context, token string) (Viewer, error) {
	return Verify(secret, token)
}

// TokenVerifier checks a token issued by another system and returns its user ID (the OpenIM
// adapter's VerifyToken is one).
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (userID string, err error)
}

// UserTokens authenticates the tokens v verifies. Their viewers are plain users: no token of
// another system makes a msggate admin.
func UserTokens(v TokenVerifier) Authenticator { return userTokens{v} }

type userTokens struct{ v TokenVerifier }

func (u userTokens) Authenticate(ctx context.Context, token string) (Viewer, error) {
	user, err := u.v.VerifyToken(ctx, token)
	if err != nil {
		return Viewer{}, err
	}
	return Viewer{UserID: user}, nil
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
