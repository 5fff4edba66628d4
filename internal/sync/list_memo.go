package sync

import (
	"slices"
	gosync "sync"
)

// Bounds of listMemo: users remembered, and conversations a remembered list may hold. A
// longer list is read in two round trips as before; the memo stays under about 50 MB.
const (
	listMemoUsers  = 4096
	listMemoMaxIDs = 256
)

// listMemo remembers, per user, the conversation list this instance read last. It is only a
// guess at which states to read along with the list (UserConversations): the list read
// from Redis decides, so a stale entry costs a second round trip, never a wrong answer.
type listMemo struct {
	mu    gosync.Mutex
	lists map[string][]string
}

func (m *listMemo) get(userID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lists[userID]
}

func (m *listMemo) remember(userID string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 || len(ids) > listMemoMaxIDs {
		delete(m.lists, userID)
		return
	}
	if m.lists == nil {
		m.lists = make(map[string][]string)
	}
	old, ok := m.lists[userID]
	if ok && slices.Equal(old, ids) {
		return // the list read was the one remembered
	}
	if !ok && len(m.lists) >= listMemoUsers {
		for u := range m.lists { // an arbitrary user makes room
			delete(m.lists, u)
			break
		}
	}
	m.lists[userID] = append([]string(nil), ids...)
}

// sameMembers reports whether a and b hold the same IDs, in any order (each without
// repeats, as a Redis set's members are).
func sameMembers(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return true
	}
	rest := make(map[string]struct{}, len(a)-i)
	for _, id := range a[i:] {
		rest[id] = struct{}{}
	}
	for _, id := range b[i:] {
		if _, ok := rest[id]; !ok {
			return false
		}
	}
	return true
}
