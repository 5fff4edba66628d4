package openim

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/im"
)

// OpenIM's access token (openimsdk/tools tokenverify/jwt_token.go BuildClaims, signed in
// pkg/common/storage/controller/auth.go CreateToken): a JWT signed HS256 with the deployment's
// share.secret, claims "UserID" (string), "PlatformID" (number), "exp" and "iat" (no "sub").
// A token is good only while OpenIM's Redis hash UID_PID_TOKEN_STATUS:<userID>:<platform name>
// (cache/cachekey/token.go GetTokenKey; the platform's name, not its number) holds it as a
// field with value 0, constant.NormalToken; 1 is invalid, 2 kicked, 3 expired
// (openimsdk/protocol constant.go). OpenIM's parseToken (internal/rpc/auth/auth.go) refuses
// a token absent from the hash.
//
// Differences from OpenIM, both stricter: OpenIM's key function accepts any HMAC algorithm
// with the secret, this accepts HS256 only, the one OpenIM signs with; and OpenIM lets the
// tokens of its configured admin users (share.imAdminUserID) through without the Redis check,
// since it never records them there, while msggate, which does not know that list, refuses
// them like any token Redis does not hold.
//
// Cost: one Redis HGET per verification, its status never cached, so that a kick or logout in
// OpenIM takes effect on msggate's next request; under load it shares its round trip with
// other requests' reads (Store.reads), and is still sent after the request arrived. What
// depends on the token alone (its signature and claims) is checked once and remembered until
// the token's exp (verifiedClaims).

type tokenClaims struct {
	UserID     string `json:"UserID"`
	PlatformID int    `json:"PlatformID"`
	jwt.RegisteredClaims
}

// platformNames is constant.PlatformID2Name (openimsdk/protocol constant/platform_id_to_name.go).
var platformNames = map[int]string{
	1: "IOS", 2: "Android", 3: "Windows", 4: "OSX", 5: "Web",
	6: "MiniWeb", 7: "Linux", 8: "APad", 9: "IPad", 10: "Admin",
}

// Token statuses OpenIM keeps in UID_PID_TOKEN_STATUS.
const (
	tokenNormal = 0
	tokenKicked = 2
)

// VerifyToken checks an OpenIM access token and returns the user it belongs to and its exp
// (OpenIM's status record may go on saying "normal" after it: a connection must still end
// then). The token is
// refused (EUNAUTHENTICATED, wrapping ErrTokenInvalid, ErrTokenExpired, ErrTokenKicked or
// ErrTokenNotActive) when it is malformed, not HS256, not signed with Options.Secret, expired,
// issued in the future, or not marked normal in OpenIM's Redis. A Redis failure is
// EUNAVAILABLE, not a refusal.
func (s *Store) VerifyToken(ctx context.Context, token string) (string, time.Time, error) {
	refuse := func(cause error, msg string) (string, time.Time, error) {
		return "", time.Time{}, &im.Error{Code: im.EUNAUTHENTICATED, Message: msg, Cause: cause}
	}
	if token == "" {
		return refuse(ErrTokenInvalid, "no OpenIM token")
	}
	if s.opts.Secret == "" {
		return refuse(ErrTokenInvalid, "OpenIM tokens cannot be verified: no secret is configured")
	}
	checked, ok := s.claims.get(token, time.Now())
	if !ok {
		var err error
		if checked, err = s.checkClaims(token); err != nil {
			return "", time.Time{}, err
		}
		s.claims.add(token, checked)
	}

	key := tokenStatusKey(checked.userID, checked.platform)
	cmd := redis.NewStringCmd(ctx, "hget", key, token)
	if err := s.reads.Do(ctx, cmd); err != nil {
		return "", time.Time{}, redisError("read token status", err)
	}
	v, err := cmd.Result()
	switch {
	case err == redis.Nil:
		return refuse(ErrTokenNotActive, "the OpenIM token is not active (logged out or replaced)")
	case err != nil:
		return "", time.Time{}, redisError("read token status", err)
	}
	status, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return "", time.Time{}, recordError("token status in "+key, err)
	case status == tokenKicked:
		return refuse(ErrTokenKicked, "the OpenIM token was kicked")
	case status != tokenNormal:
		return refuse(ErrTokenNotActive, "the OpenIM token is not active")
	}
	return checked.userID, checked.expires, nil
}

// checkedToken is what a token's signature and claims say, once checked.
type checkedToken struct {
	userID, platform string
	expires          time.Time
}

// checkClaims checks a token's algorithm, signature, expiry, issue time and claims.
func (s *Store) checkClaims(token string) (checkedToken, error) {
	refuse := func(cause error, msg string) (checkedToken, error) {
		return checkedToken{}, &im.Error{Code: im.EUNAUTHENTICATED, Message: msg, Cause: cause}
	}
	var claims tokenClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	)
	_, err := parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) {
		return []byte(s.opts.Secret), nil
	})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return refuse(ErrTokenExpired, "the OpenIM token has expired")
	case err != nil:
		return refuse(ErrTokenInvalid, "the OpenIM token is invalid")
	}
	if validUserID(claims.UserID) != nil {
		return refuse(ErrTokenInvalid, "the OpenIM token names no valid user")
	}
	platform, ok := platformNames[claims.PlatformID]
	if !ok {
		return refuse(ErrTokenInvalid, "the OpenIM token names an unknown platform")
	}
	return checkedToken{userID: claims.UserID, platform: platform, expires: claims.ExpiresAt.Time}, nil
}

// maxVerifiedClaims bounds the tokens a Store remembers the claims of: a few MB of tokens.
const maxVerifiedClaims = 16384

// verifiedClaims remembers the checked claims of tokens until each expires: they depend on
// nothing but the token, the secret and the clock (a token issued in the future is never
// remembered, as it was refused). When full, an arbitrary token makes room; a forgotten one is
// only checked again. Only the claims: the token's status is read from OpenIM's Redis on every
// verification.
type verifiedClaims struct {
	mu     sync.RWMutex
	tokens map[string]checkedToken
}

func (v *verifiedClaims) get(token string, now time.Time) (checkedToken, bool) {
	v.mu.RLock()
	c, ok := v.tokens[token]
	v.mu.RUnlock()
	if !ok || !now.Before(c.expires) {
		return checkedToken{}, false // an expired token is checked again, and refused
	}
	return c, true
}

func (v *verifiedClaims) add(token string, c checkedToken) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tokens == nil {
		v.tokens = make(map[string]checkedToken)
	}
	for old := range v.tokens {
		if len(v.tokens) < maxVerifiedClaims {
			break
		}
		delete(v.tokens, old)
	}
	v.tokens[token] = c
}

func tokenStatusKey(userID, platform string) string {
	return "UID_PID_TOKEN_STATUS:" + userID + ":" + platform
}

// TokensActive reports, aligned with tokens, whether OpenIM still holds each token as normal
// in its Redis: false once it was kicked, logged out or replaced (or for a token that does not
// parse). The signatures are not checked again: these are tokens VerifyToken accepted. One
// pipelined round trip for all of them.
func (s *Store) TokensActive(ctx context.Context, tokens []string) ([]bool, error) {
	out := make([]bool, len(tokens))
	cmds := make([]*redis.StringCmd, len(tokens))
	pipe := s.rdb.Pipeline()
	parser := jwt.NewParser()
	for i, token := range tokens {
		var claims tokenClaims
		if _, _, err := parser.ParseUnverified(token, &claims); err != nil {
			continue
		}
		platform, ok := platformNames[claims.PlatformID]
		if !ok {
			continue
		}
		cmds[i] = pipe.HGet(ctx, tokenStatusKey(claims.UserID, platform), token)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, redisError("read token status", err)
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		v, err := cmd.Result()
		out[i] = err == nil && v == strconv.Itoa(tokenNormal)
	}
	return out, nil
}
