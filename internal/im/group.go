package im

import "strings"

// Group member roles, as OpenIM numbers them (its role_level).
const (
	RoleMember int32 = 20
	RoleAdmin  int32 = 60
	RoleOwner  int32 = 100
)

// MaxGroupMembers bounds a group's member list. A group's changes are announced to every
// member's event log, so the bound also bounds the work one message does.
const MaxGroupMembers = 5000

// GroupMember is one member of a group and their role there.
type GroupMember struct {
	UserID string
	Role   int32
}

// roleNames are the names a member list may give a role; no name means an ordinary member.
var roleNames = map[string]int32{"": RoleMember, "member": RoleMember, "admin": RoleAdmin, "owner": RoleOwner}

// ValidateGroup checks a group's complete member list before it replaces the stored one: the
// group ID, at most MaxGroupMembers members, each with a valid user ID, listed once, and with
// one of the three roles. An empty list is valid: it removes everyone.
func ValidateGroup(groupID string, members []GroupMember) error {
	if err := ValidateID("group ID", groupID); err != nil {
		return err
	}
	if len(members) > MaxGroupMembers {
		return Errorf(ELIMIT, "a group has at most %d members", MaxGroupMembers)
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if err := ValidateID("member user ID", m.UserID); err != nil {
			return err
		}
		if seen[m.UserID] {
			return Errorf(EINVALID, "%s is listed twice", m.UserID)
		}
		seen[m.UserID] = true
		if m.Role != RoleMember && m.Role != RoleAdmin && m.Role != RoleOwner {
			return Errorf(EINVALID, "member %s has role %d; roles are %d (owner), %d (admin) and %d (member)",
				m.UserID, m.Role, RoleOwner, RoleAdmin, RoleMember)
		}
	}
	return nil
}

// ParseGroupMembers reads a member list written as "alice:owner,bob:admin,carol": user IDs
// separated by commas, each with an optional role (owner, admin or member, in any case; member
// when omitted). It checks the roles' names only; ValidateGroup checks the list.
func ParseGroupMembers(list string) ([]GroupMember, error) {
	items := strings.Split(list, ",")
	out := make([]GroupMember, 0, len(items))
	for _, item := range items {
		user, name, _ := strings.Cut(strings.TrimSpace(item), ":")
		role, ok := roleNames[strings.ToLower(name)]
		if !ok {
			return nil, Errorf(EINVALID, "member %q: role must be owner, admin or member", item)
		}
		out = append(out, GroupMember{UserID: user, Role: role})
	}
	return out, nil
}
