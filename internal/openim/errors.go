package openim

import (
	"errors"
	"fmt"

	"github.com/msggate/msggate/internal/im"
)

// Sentinel errors, matched with errors.Is. The request-time ones arrive wrapped in an
// *im.Error whose code the GraphQL boundary maps (EUNAUTHENTICATED for the token errors).
var (
	// ErrNotOpenIM: the database given to Open lacks a collection every OpenIM database has.
	ErrNotOpenIM = errors.New("not an OpenIM database")

	// ErrTokenInvalid: the token is malformed, not signed with the deployment's secret, not
	// HS256, lacks OpenIM's claims (exp included: OpenIM always sets it), was issued in the
	// future, or names a user or platform OpenIM cannot have issued it for.
	ErrTokenInvalid = errors.New("invalid OpenIM token")
	// ErrTokenExpired: the token's exp has passed.
	ErrTokenExpired = errors.New("OpenIM token expired")
	// ErrTokenKicked: OpenIM marked the token kicked (status 2), e.g. after a login elsewhere.
	ErrTokenKicked = errors.New("OpenIM token kicked")
	// ErrTokenNotActive: OpenIM's Redis does not hold the token as normal (status 0): it is
	// absent (logged out, expired from Redis) or marked invalid or expired.
	ErrTokenNotActive = errors.New("OpenIM token not active")
)

// mongoError wraps a failed MongoDB call: the request fails with EUNAVAILABLE, it never reads
// as "no records".
func mongoError(op string, err error) error {
	return im.Unavailable("OpenIM's MongoDB", fmt.Errorf("mongodb %s: %w", op, err))
}

// redisError does the same for OpenIM's Redis.
func redisError(op string, err error) error {
	return im.Unavailable("OpenIM's Redis", fmt.Errorf("redis %s: %w", op, err))
}

// recordError reports a record whose shape is not what OpenIM v3.8 writes (EINTERNAL: a
// retry will not help, and guessing would serve a wrong answer).
func recordError(what string, err error) error {
	return fmt.Errorf("openim: unexpected %s: %w", what, err)
}
