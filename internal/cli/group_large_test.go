package cli_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
)

// largeGroupSize is the size of the large group tests: im.MaxGroupMembers, or a fifth of it
// under -short. MSGGATE_LARGE_GROUP overrides it (to measure other sizes).
func largeGroupSize(t *testing.T) int {
	if s := os.Getenv("MSGGATE_LARGE_GROUP"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return im.MaxGroupMembers / 5
	}
	return im.MaxGroupMembers
}

// largeGroupUser is the i-th user of the large group tests.
func largeGroupUser(i int) string { return fmt.Sprintf("u%05d", i) }

// Ensure `msggate group` creates a group of im.MaxGroupMembers members on the embedded store
// in one try, then changes it (2/5 of the members leave, 1/5 more join, one role changes),
// and that the member list and every member's conversation list read back exactly so.
func TestGroupCommandLargeGroupEmbedded(t *testing.T) {
	n := largeGroupSize(t)
	dir := t.TempDir()
	rs := testenv.Redis(t)
	flags := []string{"-data-dir", dir, "-redis-url", rs.URL()}
	const group = "big"

	want := map[string]int32{}
	var list []string
	for i := 0; i < n; i++ {
		u, role := largeGroupUser(i), ""
		want[u] = im.RoleMember
		switch {
		case i == 0:
			role, want[u] = ":owner", im.RoleOwner
		case i < 10:
			role, want[u] = ":admin", im.RoleAdmin
		}
		list = append(list, u+role)
	}
	start := time.Now()
	out, progress := runCommand(t, cli.Group, append([]string{"-id", group, "-members", strings.Join(list, ",")}, flags...)...)
	t.Logf("created a %d-member group in %v", n, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, fmt.Sprintf("%d members", n)) {
		t.Errorf("output %q", out)
	}
	_ = progress
	checkLargeGroup(t, flags, group, want, nil)

	// Members 0 .. 2n/5-1 leave, n .. 6n/5-1 join, and member 2n/5 becomes the owner.
	removed := 2 * n / 5
	list = list[:0]
	var gone []string
	for u := range want {
		var i int
		fmt.Sscanf(u, "u%05d", &i)
		if i < removed {
			delete(want, u)
			gone = append(gone, u)
		}
	}
	for i := n; i < n+n/5; i++ {
		want[largeGroupUser(i)] = im.RoleMember
	}
	want[largeGroupUser(removed)] = im.RoleOwner
	for u, role := range want {
		name := map[int32]string{im.RoleOwner: ":owner", im.RoleAdmin: ":admin", im.RoleMember: ""}[role]
		list = append(list, u+name)
	}
	start = time.Now()
	out, _ = runCommand(t, cli.Group, append([]string{"-id", group, "-members", strings.Join(list, ",")}, flags...)...)
	t.Logf("changed it to %d members (%d left, %d joined) in %v", len(want), len(gone), n/5, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, fmt.Sprintf("%d members", len(want))) {
		t.Errorf("output %q", out)
	}
	checkLargeGroup(t, flags, group, want, gone)
}

// checkLargeGroup opens the store the flags name and checks that the group has exactly the
// wanted members with their roles, that each of them has the group's two conversations on
// their conversation list and that none of the gone users has either.
func checkLargeGroup(t *testing.T, flags []string, group string, want map[string]int32, gone []string) {
	t.Helper()
	ctx := context.Background()
	var cfg gateway.Config
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	select {
	case <-g.Store.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the store did not get ready")
	}
	members, err := g.Store.GroupMembers(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, m := range members {
		got[m.UserID] = m.Role
	}
	if diff := roleDiff(got, want); diff != "" {
		t.Errorf("group members: %s", diff)
	}
	// Memberships as access checks read them: by user, for a sample of members and leavers.
	for i, u := range sortedKeys(want) {
		if i%97 != 0 {
			continue
		}
		m, err := g.Store.FindGroupMemberships(ctx, u, []string{group})
		if err != nil || m[group].Role != want[u] {
			t.Errorf("membership of %s: %+v, %v; want role %d", u, m, err, want[u])
		}
	}
	for i, u := range gone {
		if i%97 != 0 {
			continue
		}
		if m, err := g.Store.FindGroupMemberships(ctx, u, []string{group}); err != nil || len(m) != 0 {
			t.Errorf("%s left but reads %+v, %v", u, m, err)
		}
	}
	// The conversation list of every user who was ever a member, in one read.
	everyone := append(sortedKeys(want), gone...)
	found, _, err := g.Store.FindUsersConversations(ctx, everyone, 10)
	if err != nil {
		t.Fatal(err)
	}
	chat, _ := im.GroupConversationID(group)
	notes, _ := im.GroupNotificationConversationID(group)
	lists := map[string]map[string]bool{}
	for u, ids := range found {
		lists[u] = map[string]bool{}
		for _, id := range ids {
			if lists[u][id] {
				t.Errorf("%s has %s twice", u, id)
			}
			lists[u][id] = true
		}
	}
	bad := 0
	for u, l := range lists {
		_, member := want[u]
		if len(l) != 2 || !l[chat] || !l[notes] || !member {
			if bad++; bad < 5 {
				t.Errorf("%s (member: %v) has conversations %v", u, member, l)
			}
		}
	}
	for u := range want {
		if lists[u] == nil {
			if bad++; bad < 5 {
				t.Errorf("member %s has no conversation list entry", u)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d users with wrong conversation lists", bad)
	}
}

// roleDiff describes how got differs from want, "" when it does not.
func roleDiff(got, want map[string]int32) string {
	var b strings.Builder
	n := 0
	for u, r := range want {
		if g, ok := got[u]; !ok || g != r {
			if n++; n <= 5 {
				fmt.Fprintf(&b, "%s has role %d (present: %v), want %d; ", u, g, ok, r)
			}
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			if n++; n <= 5 {
				fmt.Fprintf(&b, "%s should not be a member; ", u)
			}
		}
	}
	if n > 0 {
		fmt.Fprintf(&b, "%d differences (%d members, want %d)", n, len(got), len(want))
	}
	return b.String()
}

func sortedKeys(m map[string]int32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
