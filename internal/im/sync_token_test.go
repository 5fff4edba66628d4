package im

import (
	"strings"
	"testing"
)

func TestSyncTokenRoundTrip(t *testing.T) {
	tok := SyncToken{User: Cursor{Epoch: "a1", Position: 4},
		Groups: map[string]Cursor{"sg_g2": {Epoch: "b2", Position: 0}, "n_sg_g2": {Epoch: "c3", Position: 9}}}
	s := tok.String()
	if want := "a1.4,n_sg_g2=c3.9,sg_g2=b2.0"; s != want {
		t.Fatalf("token prints as %q, want %q", s, want)
	}
	got, err := ParseSyncToken(s)
	if err != nil || got.User != tok.User || len(got.Groups) != 2 || got.Groups["n_sg_g2"] != tok.Groups["n_sg_g2"] {
		t.Fatalf("parsed %q as %+v, %v", s, got, err)
	}
	// A token of the user's log alone, as earlier versions gave, follows no group yet.
	old, err := ParseSyncToken("a1.4")
	if err != nil || old.User != (Cursor{Epoch: "a1", Position: 4}) || old.Groups != nil {
		t.Fatalf("a user-log token parsed as %+v, %v", old, err)
	}
}

func TestSyncTokenRefusals(t *testing.T) {
	for _, s := range []string{"a1.4,si_a_b=c.1", "a1.4,sg_g=", "a1.4,sg_g=c.1,sg_g=c.2", "a1.4,", "a1.4,sg_g=c.-1", "a1.x,sg_g=c.1"} {
		if _, err := ParseSyncToken(s); ErrorCode(err) != EINVALID {
			t.Errorf("ParseSyncToken(%q): %v, want INVALID", s, err)
		}
	}
	many := "a.1" + strings.Repeat(",sg_g=c.1", MaxSyncTokenGroups+1)
	if _, err := ParseSyncToken(many); ErrorCode(err) != ELIMIT {
		t.Errorf("a token with %d group entries: %v, want LIMIT_EXCEEDED", MaxSyncTokenGroups+1, err)
	}
}
