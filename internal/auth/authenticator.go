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
