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
	got, err := ParseSyncToken(s, ParseConversationID)
	if err != nil || got.User != tok.User || len(got.Groups) != 2 || got.Groups["n_sg_g2"] != tok.Groups["n_sg_g2"] {
		t.Fatalf("parsed %q as %+v, %v", s, got, err)
	}
	// A token of the user's log alone, as earlier versions gave, follows no group yet.
	old, err := ParseSyncToken("a1.4", ParseConversationID)
	if err != nil || old.User != (Cursor{Epoch: "a1", Position: 4}) || old.Groups != nil {
		t.Fatalf("a user-log token parsed as %+v, %v", old, err)
	}
}

func TestSyncTokenRefusals(t *testing.T) {
	for _, s := range []string{"a1.4,si_a_b=c.1", "a1.4,sg_g=", "a1.4,sg_g=c.1,sg_g=c.2", "a1.4,", "a1.4,sg_g=c.-1", "a1.x,sg_g=c.1"} {
		if _, err := ParseSyncToken(s, ParseConversationID); ErrorCode(err) != EINVALID {
			t.Errorf("ParseSyncToken(%q): %v, want INVALID", s, err)
		}
	}
	many := "a.1" + strings.Repeat(",sg_g=c.1", MaxSyncTokenGroups+1)
	if _, err := ParseSyncToken(many, ParseConversationID); ErrorCode(err) != ELIMIT {
		t.Errorf("a token with %d group entries: %v, want LIMIT_EXCEEDED", MaxSyncTokenGroups+1, err)
	}
}

// Ensure a token written in OpenIM mode, whose group entries are OpenIM's group conversations
// (a group ID holding '_' or '=', a legacy g_ group), parses back by OpenIM's rules, and that
// msggate's own rules still refuse those entries.
func TestSyncTokenOpenIMRules(t *testing.T) {
	tok := SyncToken{User: Cursor{Epoch: "a1", Position: 4}, Groups: map[string]Cursor{
		"sg_team_1": {Epoch: "b2", Position: 3}, "g_legacy_2": {Epoch: "c3", Position: 0}, "sg_x=y": {Epoch: "d4", Position: 7}}}
	s := tok.String()
	got, err := ParseSyncToken(s, ParseOpenIMConversationID)
	if err != nil {
		t.Fatalf("OpenIM rules: ParseSyncToken(%q): %v", s, err)
	}
	if got.User != tok.User || len(got.Groups) != len(tok.Groups) {
		t.Fatalf("OpenIM rules: %q parsed as %+v, want %+v", s, got, tok)
	}
	for id, c := range tok.Groups {
		if got.Groups[id] != c {
			t.Errorf("OpenIM rules: entry %s parsed as %+v, want %+v", id, got.Groups[id], c)
		}
	}
	if _, err := ParseSyncToken(s, ParseConversationID); ErrorCode(err) != EINVALID {
		t.Errorf("msggate's rules: ParseSyncToken(%q): %v, want INVALID", s, err)
	}
	// Entries that are not group conversations by OpenIM's rules either.
	for _, s := range []string{"a1.4,si_a_b=c.1", "a1.4,n_g1=c.1", "a1.4,sg_=c.1", "a1.4,x_g=c.1"} {
		if _, err := ParseSyncToken(s, ParseOpenIMConversationID); ErrorCode(err) != EINVALID {
			t.Errorf("OpenIM rules: ParseSyncToken(%q): %v, want INVALID", s, err)
		}
	}
}
