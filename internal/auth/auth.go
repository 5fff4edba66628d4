// Package auth issues and verifies msggate's bearer tokens: HS256 JWTs whose subject is the
// user ID. Its Authenticator is what the GraphQL layer checks a request's token with: msggate's
// own tokens (HS256), an identity provider's (IdentityProvider: RS256/ES256 tokens verified
// with the keys it publishes as a JWKS, beside msggate's own through WithIdentityProvider), or
// another system's (UserTokens, e.g. an OpenIM deployment's). It knows nothing of HTTP; the
// GraphQL layer reads the header.
package auth

import (
	"context"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/im"
)

// Claims are the parts of a token msggate uses.
type Claims struct {
	jwt.RegisteredClaims
	// Role "admin" allows administrative operations (managing groups).
	Role string `json:"role,omitempty"`
}

// Viewer is the authenticated caller of one request.
type Viewer struct {
	UserID string
	Admin  bool
	// Expires is when the token the viewer was authenticated by expires (its exp); zero when
	// the token does not say. A WebSocket connection authenticated by the token is closed
	// then.
	Expires time.Time
}

// Issue signs a token for userID valid for ttl.
func Issue(secret []byte, userID string, admin bool, ttl time.Duration, now time.Time) (string, error) {
	if err := im.ValidateID("user ID", userID); err != nil {
		return "", err
	}
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   userID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	if admin {
		c.Role = "admin"
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
}

// Verify checks a token's signature, algorithm and expiry and returns its viewer. Every
// failure is EUNAUTHENTICATED with a message that says what is wrong but nothing secret.
func Verify(secret []byte, token string) (Viewer, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired())
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, "the token has expired")
	case err != nil:
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, "the token is not valid")
	}
	if im.ValidateID("user ID", c.Subject) != nil {
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, "the token names no valid user")
	}
	return Viewer{UserID: c.Subject, Admin: c.Role == "admin", Expires: c.ExpiresAt.Time}, nil
}

type viewerKey struct{}

// WithViewer returns a context carrying the viewer, or the error that prevented one: a request
// with a bad token must fail as unauthenticated, not run as anonymous.
func WithViewer(ctx context.Context, v Viewer, err error) context.Context {
	return context.WithValue(ctx, viewerKey{}, viewerOrError{v, err})
}

type viewerOrError struct {
	v   Viewer
	err error
}

// ViewerFrom returns the request's viewer, or EUNAUTHENTICATED when there is none.
func ViewerFrom(ctx context.Context) (Viewer, error) {
	ve, ok := ctx.Value(viewerKey{}).(viewerOrError)
	switch {
	case !ok:
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, "a bearer token is required")
	case ve.err != nil:
		return Viewer{}, ve.err
	case ve.v.UserID == "":
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, "a bearer token is required")
	}
	return ve.v, nil
}
