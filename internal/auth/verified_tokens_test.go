package auth

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/im"
)

// Ensure a remembered token is answered as verifying it would be: the same viewer while it is
// valid, refused once it has expired; and that the memory stays within its bound.
func TestHS256RemembersTokensUntilTheyExpire(t *testing.T) {
	secret := []byte("secret-for-tests-0123456789abcdef")
	a := HS256(secret).(*hs256)
	ctx := context.Background()
	tok, err := Issue(secret, "alice", true, 2*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.verified.get(tok, time.Now()); !ok {
		t.Fatal("an accepted token was not remembered")
	}
	if again, err := a.Authenticate(ctx, tok); err != nil || again != first || !again.Admin {
		t.Fatalf("remembered token: %+v, %v; first %+v", again, err, first)
	}
	if _, err := a.Authenticate(ctx, tok+"x"); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Fatalf("a token differing from a remembered one: %v", err)
	}
	time.Sleep(time.Until(first.Expires) + 50*time.Millisecond)
	if _, err := a.Authenticate(ctx, tok); im.ErrorCode(err) != im.EUNAUTHENTICATED {
		t.Fatalf("a remembered token past its expiry: %v, want EUNAUTHENTICATED", err)
	}

	a.verified.max = 10
	for i := range 25 {
		tok, _ := Issue(secret, fmt.Sprint("u", i), false, time.Hour, time.Now())
		if _, err := a.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.verified.tokens); n > 10 {
		t.Fatalf("%d tokens remembered, bound 10", n)
	}
}
