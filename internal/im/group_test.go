package im_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure the member list syntax of the group command reads users and roles, with member as the
// default and role names in any case, and names the item whose role is unknown.
func TestParseGroupMembers(t *testing.T) {
	got, err := im.ParseGroupMembers("alice:owner, bob:ADMIN ,carol,dave:member")
	if err != nil {
		t.Fatal(err)
	}
	want := []im.GroupMember{{"alice", im.RoleOwner}, {"bob", im.RoleAdmin}, {"carol", im.RoleMember}, {"dave", im.RoleMember}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	_, err = im.ParseGroupMembers("alice:owner,bob:king")
	if im.ErrorCode(err) != im.EINVALID || !strings.Contains(err.Error(), `"bob:king"`) || !strings.Contains(err.Error(), "role") {
		t.Errorf("an unknown role: %v", err)
	}
}

// Ensure a member list is refused, with the code a client sees, for a bad group ID, a bad or
// repeated user ID, an unknown role number and more than MaxGroupMembers members, and that the
// largest list allowed and an empty list pass.
func TestValidateGroup(t *testing.T) {
	many := func(n int) []im.GroupMember {
		out := make([]im.GroupMember, n)
		for i := range out {
			out[i] = im.GroupMember{UserID: fmt.Sprintf("u%d", i), Role: im.RoleMember}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		group   string
		members []im.GroupMember
		code    string
		text    string
	}{
		{"a valid list", "team", []im.GroupMember{{"alice", im.RoleOwner}, {"bob", im.RoleAdmin}, {"carol", im.RoleMember}}, "", ""},
		{"no members", "team", nil, "", ""},
		{"the largest group", "team", many(im.MaxGroupMembers), "", ""},
		{"one member too many", "team", many(im.MaxGroupMembers + 1), im.ELIMIT, "at most 5000 members"},
		{"no group ID", "", many(1), im.EINVALID, "group ID"},
		{"a group ID with an underscore", "my_team", many(1), im.EINVALID, "group ID"},
		{"an empty user ID", "team", []im.GroupMember{{"", im.RoleMember}}, im.EINVALID, "member user ID"},
		{"a bad user ID", "team", []im.GroupMember{{"a:b", im.RoleMember}}, im.EINVALID, "member user ID"},
		{"a user twice", "team", []im.GroupMember{{"alice", im.RoleOwner}, {"bob", im.RoleMember}, {"alice", im.RoleMember}}, im.EINVALID, "alice is listed twice"},
		{"an unknown role", "team", []im.GroupMember{{"alice", 50}}, im.EINVALID, "role 50"},
		{"no role", "team", []im.GroupMember{{"alice", 0}}, im.EINVALID, "role 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := im.ValidateGroup(tc.group, tc.members)
			if im.ErrorCode(err) != tc.code || (err != nil && !strings.Contains(err.Error(), tc.text)) {
				t.Errorf("got %v (code %q), want code %q mentioning %q", err, im.ErrorCode(err), tc.code, tc.text)
			}
		})
	}
}
