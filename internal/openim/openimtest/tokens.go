package openimtest

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims is openimsdk/tools tokenverify.Claims: no json tags, so the claims are "UserID",
// "PlatformID" and the registered "exp" and "iat".
type Claims struct {
	UserID     string
	PlatformID int
	jwt.RegisteredClaims
}

var platformNames = map[int]string{1: "IOS", 2: "Android", 3: "Windows", 4: "OSX", 5: "Web",
	6: "MiniWeb", 7: "Linux", 8: "APad", 9: "IPad", 10: "Admin"}

// TokenKey is cachekey.GetTokenKey: UID_PID_TOKEN_STATUS:<userID>:<platform name>.
func TokenKey(userID string, platformID int) string {
	return "UID_PID_TOKEN_STATUS:" + userID + ":" + platformNames[platformID]
}

// Login is authDatabase.CreateToken for a user who is not an admin: a token built by
// tokenverify.BuildClaims (exp ttlDays from now, iat 5 s ago), signed HS256 with the secret,
// recorded as normal (0) in the user's token hash for the platform, which expires with it.
func (d *Deployment) Login(userID string, platformID int, ttlDays int64) string {
	d.t.Helper()
	token := SignToken(d.Secret, BuildClaims(userID, platformID, time.Duration(ttlDays)*24*time.Hour))
	d.SetTokenStatus(userID, platformID, token, TokenNormal)
	ctx := context.Background()
	d.check(d.Redis.Expire(ctx, TokenKey(userID, platformID), time.Duration(ttlDays)*24*time.Hour).Err(), "expire token hash")
	return token
}

// SetTokenStatus is tokenCache.SetTokenFlag: HSET the token's status (0 normal, 1 invalid,
// 2 kicked) in the user's hash for the platform. Kicking a token is this with TokenKicked.
func (d *Deployment) SetTokenStatus(userID string, platformID int, token string, status int) {
	d.t.Helper()
	d.check(d.Redis.HSet(context.Background(), TokenKey(userID, platformID), token, status).Err(), "set token status")
}

// DropTokens removes every token of the user's hash for the platform, as OpenIM's token cache
// removes tokens (tokenCache.DeleteTokenByUidPid HDELs them): they are then no longer held,
// which OpenIM's parseToken refuses.
func (d *Deployment) DropTokens(userID string, platformID int) {
	d.t.Helper()
	d.check(d.Redis.Del(context.Background(), TokenKey(userID, platformID)).Err(), "delete token hash")
}

// BuildClaims is tokenverify.BuildClaims with the lifetime given directly.
func BuildClaims(userID string, platformID int, ttl time.Duration) Claims {
	now := time.Now()
	return Claims{UserID: userID, PlatformID: platformID, RegisteredClaims: jwt.RegisteredClaims{
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		IssuedAt:  jwt.NewNumericDate(now.Add(-5 * time.Second)),
	}}
}

// SignToken signs claims as CreateToken does (HS256 with the secret).
func SignToken(secret string, claims jwt.Claims) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		panic(err)
	}
	return s
}
