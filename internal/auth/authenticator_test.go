package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

type verifierFunc func(ctx context.Context, token string) (string, time.Time, error)

func (f verifierFunc) VerifyToken(ctx context.Context, token string) (string, time.Time, error) {
	return f(ctx, token)
}

// Ensure both authenticators answer with the viewer their tokens name, expiring with the
// token, another system's tokens never make an admin, and a refusal or a failure to check
// keeps its code.
func TestAuthenticators(t *testing.T) {
	ctx := context.Background()
	admin, _ := auth.Issue(secret, "root", true, time.Hour, time.Now())
	if v, err := auth.HS256(secret).Authenticate(ctx, admin); err != nil || v.UserID != "root" || !v.Admin {
		t.Errorf("HS256: %+v, %v", v, err)
	}
	if _, err := auth.HS256(secret).Authenticate(ctx, "x.y.z"); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Errorf("HS256 garbage: %v", err)
	}
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	other := auth.UserTokens(verifierFunc(func(_ context.Context, token string) (string, time.Time, error) {
		switch token {
		case "good":
			return "user_with_underscores", exp, nil
		case "down":
			return "", time.Time{}, im.Unavailable("the token store", nil)
		}
		return "", time.Time{}, im.Errorf(im.EUNAUTHENTICATED, "refused")
	}))
	if v, err := other.Authenticate(ctx, "good"); err != nil || v.UserID != "user_with_underscores" || v.Admin || !v.Expires.Equal(exp) {
		t.Errorf("UserTokens good: %+v, %v; want the user, expiring at %v", v, err, exp)
	}
	if _, err := other.Authenticate(ctx, "bad"); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Errorf("UserTokens bad: %v", err)
	}
	if _, err := other.Authenticate(ctx, "down"); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Errorf("UserTokens with the store down: %v", err)
	}
}
