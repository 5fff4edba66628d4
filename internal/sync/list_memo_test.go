package sync

import (
	"fmt"
	"testing"
)

func TestSameMembers(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want bool
	}{
		{[]string{"x", "y", "z"}, []string{"x", "y", "z"}, true},
		{[]string{"x", "y", "z"}, []string{"z", "x", "y"}, true},
		{[]string{"x", "y"}, []string{"x", "y", "z"}, false},
		{[]string{"x", "y", "w"}, []string{"x", "y", "z"}, false},
		{nil, nil, true},
	} {
		if got := sameMembers(tc.a, tc.b); got != tc.want {
			t.Errorf("sameMembers(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Ensure the memo stays within its bounds: users beyond listMemoUsers push others out, and a
// list longer than listMemoMaxIDs (or an empty one) is forgotten, not kept.
func TestListMemoBounds(t *testing.T) {
	var m listMemo
	for i := range listMemoUsers + 10 {
		m.remember(fmt.Sprint("u", i), []string{"c"}, "7")
	}
	if n := len(m.lists); n != listMemoUsers {
		t.Errorf("%d users remembered, want at most %d", n, listMemoUsers)
	}
	last := fmt.Sprint("u", listMemoUsers+9)
	if got := m.get(last); len(got.IDs) != 1 || got.Version != "7" {
		t.Errorf("the newest user's list is %+v", got)
	}
	m.remember(last, make([]string, listMemoMaxIDs+1), "8")
	if got := m.get(last); got.IDs != nil || got.Version != "" {
		t.Errorf("a list of %d IDs was kept", listMemoMaxIDs+1)
	}
	ids := []string{"a", "b"}
	m.remember("copy", ids, "")
	ids[0] = "changed"
	if got := m.get("copy"); got.IDs[0] != "a" {
		t.Errorf("the memo shares the caller's slice: %v", got)
	}
}
