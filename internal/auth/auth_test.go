package auth_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

var secret = []byte("secret-for-tests-0123456789abcdef")

func TestIssueAndVerify(t *testing.T) {
	now := time.Now()
	tok, err := auth.Issue(secret, "alice", true, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.Verify(secret, tok)
	if err != nil || v.UserID != "alice" || !v.Admin {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	// exp has a precision of a second
	if want := now.Add(time.Hour).Truncate(time.Second); !v.Expires.Equal(want) {
		t.Errorf("Expires = %v, want the token's exp %v", v.Expires, want)
	}
	if _, err := auth.Issue(secret, "bad_id", false, time.Hour, time.Now()); im.ErrorCode(err) != im.EINVALID {
		t.Errorf("issuing for an invalid user ID: %v", err)
	}
}

// Ensure every kind of bad token is refused as unauthenticated.
func TestVerifyRefuses(t *testing.T) {
	expired, _ := auth.Issue(secret, "alice", false, time.Hour, time.Now().Add(-2*time.Hour))
	other, _ := auth.Issue([]byte("another-secret-0123456789abcdef"), "alice", false, time.Hour, time.Now())
	good, _ := auth.Issue(secret, "alice", false, time.Hour, time.Now())
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	for name, tok := range map[string]string{"expired": expired, "wrong secret": other, "alg none": none, "garbage": "x.y.z", "empty": ""} {
		if _, err := auth.Verify(secret, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
			t.Errorf("%s: err = %v, want EUNAUTHENTICATED", name, err)
		}
	}
}
