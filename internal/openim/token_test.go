package openim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// OpenIM's access tokens are accepted while OpenIM's Redis marks them normal, and refused,
// each with its reason, otherwise.
func TestVerifyTokenAcceptsOnlyWhatOpenIMWould(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	const ios, web = 1, 5
	good := d.Login("u_1", ios, 90)
	s := d.open(openim.Options{Secret: d.Secret})

	user, exp, err := s.VerifyToken(ctx, good)
	if err != nil || user != "u_1" {
		t.Fatalf("a token OpenIM issued: %q, %v", user, err)
	}
	// Its exp, so that a connection it opened ends then.
	if d := time.Until(exp); d < 90*24*time.Hour-time.Minute || d > 90*24*time.Hour {
		t.Errorf("the token's expiry: %v, want its exp, 90 days from now", exp)
	}
	trips := d.trips.Take()
	if len(trips) != 1 || len(trips[0]) != 1 || trips[0][0] != "hget UID_PID_TOKEN_STATUS:u_1:IOS" {
		t.Errorf("verification cost %v, want one HGET of the user's IOS token hash", trips)
	}

	signed := func(method jwt.SigningMethod, secret any, claims jwt.Claims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := openimtest.BuildClaims("u_1", ios, time.Hour)
	// Each of these is recorded as normal in OpenIM's Redis, so only the token itself is wrong.
	forged := openimtest.SignToken("not-the-secret", valid)
	hs512 := signed(jwt.SigningMethodHS512, []byte(d.Secret), valid)
	none := signed(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid)
	expired := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u_1", ios, -time.Minute))
	noExp := openimtest.SignToken(d.Secret, openimtest.Claims{UserID: "u_1", PlatformID: ios})
	future := valid
	future.IssuedAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
	issuedLater := openimtest.SignToken(d.Secret, future)
	badPlatform := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u_1", 42, time.Hour))
	badUser := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u:1", ios, time.Hour))
	for _, tok := range []string{forged, hs512, none, expired, noExp, issuedLater, badPlatform, badUser} {
		d.SetTokenStatus("u_1", ios, tok, openimtest.TokenNormal)
	}
	// OpenIM's tokens for one user and platform issued in the same second are identical; the
	// lifetimes keep these three apart.
	kicked := d.Login("u_1", ios, 91)
	d.SetTokenStatus("u_1", ios, kicked, openimtest.TokenKicked)
	invalid := d.Login("u_1", ios, 92)
	d.SetTokenStatus("u_1", ios, invalid, openimtest.TokenInvalid)
	absent := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u_1", ios, time.Hour)) // never recorded (logged out)
	otherPlatform := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u_1", ios, 2*time.Hour))
	d.SetTokenStatus("u_1", web, otherPlatform, openimtest.TokenNormal) // recorded under Web, claims IOS

	for _, tc := range []struct {
		name, token string
		want        error
	}{
		{"empty", "", openim.ErrTokenInvalid},
		{"garbage", "not.a.jwt", openim.ErrTokenInvalid},
		{"forged", forged, openim.ErrTokenInvalid},
		{"HS512", hs512, openim.ErrTokenInvalid},
		{"alg none", none, openim.ErrTokenInvalid},
		{"expired", expired, openim.ErrTokenExpired},
		{"no exp", noExp, openim.ErrTokenInvalid},
		{"issued in the future", issuedLater, openim.ErrTokenInvalid},
		{"unknown platform", badPlatform, openim.ErrTokenInvalid},
		{"user ID with ':'", badUser, openim.ErrTokenInvalid},
		{"kicked", kicked, openim.ErrTokenKicked},
		{"marked invalid", invalid, openim.ErrTokenNotActive},
		{"absent", absent, openim.ErrTokenNotActive},
		{"recorded for another platform", otherPlatform, openim.ErrTokenNotActive},
	} {
		user, _, err := s.VerifyToken(ctx, tc.token)
		if !errors.Is(err, tc.want) || im.ErrorCode(err) != im.EUNAUTHENTICATED || user != "" {
			t.Errorf("%s: %q, %v; want %v (EUNAUTHENTICATED)", tc.name, user, err, tc.want)
		}
	}

	// Kicking a token takes effect on the next verification: nothing is cached.
	d.SetTokenStatus("u_1", ios, good, openimtest.TokenKicked)
	if _, _, err := s.VerifyToken(ctx, good); !errors.Is(err, openim.ErrTokenKicked) {
		t.Errorf("after OpenIM kicked it: %v", err)
	}

	// Without the deployment's secret nothing is accepted.
	unconfigured := d.open(openim.Options{})
	if _, _, err := unconfigured.VerifyToken(ctx, d.Login("u_2", ios, 1)); !errors.Is(err, openim.ErrTokenInvalid) {
		t.Errorf("no secret configured: %v", err)
	}

	// A Redis failure is an outage, not a refusal.
	d.redis.Stop()
	if _, _, err := s.VerifyToken(ctx, openimtest.SignToken(d.Secret, valid)); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Errorf("Redis down: %v, want EUNAVAILABLE", err)
	}
}

// Ensure a token accepted before is checked again on every verification: its status in
// OpenIM's Redis is read each time (one HGET, however often it was accepted), and it is
// refused as expired once its exp passes, though OpenIM's Redis still marks it normal.
func TestVerifyTokenAgainAfterAcceptingIt(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	const android = 2
	s := d.open(openim.Options{Secret: d.Secret})
	short := openimtest.SignToken(d.Secret, openimtest.BuildClaims("u_1", android, 1500*time.Millisecond))
	d.SetTokenStatus("u_1", android, short, openimtest.TokenNormal)
	for range 3 {
		if user, _, err := s.VerifyToken(ctx, short); err != nil || user != "u_1" {
			t.Fatalf("a good token: %q, %v", user, err)
		}
	}
	d.trips.Take()
	if _, _, err := s.VerifyToken(ctx, short); err != nil {
		t.Fatal(err)
	}
	if trips := d.trips.Take(); len(trips) != 1 || len(trips[0]) != 1 || trips[0][0] != "hget UID_PID_TOKEN_STATUS:u_1:Android" {
		t.Errorf("the fourth verification cost %v, want one HGET of the token's status", trips)
	}
	// exp has a second's precision: wait past it.
	time.Sleep(time.Until(time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)))
	if _, _, err := s.VerifyToken(ctx, short); !errors.Is(err, openim.ErrTokenExpired) {
		t.Errorf("after its exp: %v, want ErrTokenExpired", err)
	}
}
