package sync

import (
	"slices"
	gosync "sync"

	"github.com/msggate/msggate/internal/cache"
)

// Bounds of listMemo: users remembered, and conversations a remembered list may hold. A
// longer list is read in two round trips as before; the memo stays under about 50 MB.
const (
	listMemoUsers  = 4096
	listMemoMaxIDs = 256
)

// listMemo remembers, per user, the conversation list this instance read last and the list's
// version then. While Redis holds that version, the list is the one remembered (the version
// moves before any change of the list is acknowledged, see cache.GetConversationListWithStates),
// so a read asks Redis for the version instead of the whole list. Without a version it is only
// a guess at which states to read along with the list: the list read from Redis decides, so a
// stale entry costs a second round trip, never a wrong answer.
type listMemo struct {
	mu    gosync.Mutex
	lists map[string]cache.ConversationList
}

func (m *listMemo) get(userID string) cache.ConversationList {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lists[userID]
}

// remember keeps the list as read, in the order read (so that the next read's comparison is
// the fast one), with its version ("" when unknown).
func (m *listMemo) remember(userID string, ids []string, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 || len(ids) > listMemoMaxIDs {
		delete(m.lists, userID)
		return
	}
	if m.lists == nil {
		m.lists = make(map[string]cache.ConversationList)
	}
	old, ok := m.lists[userID]
	if ok && old.Version == version && slices.Equal(old.IDs, ids) {
		return // the list read was the one remembered
	}
	if !ok && len(m.lists) >= listMemoUsers {
		for u := range m.lists { // an arbitrary user makes room
			delete(m.lists, u)
			break
		}
	}
	m.lists[userID] = cache.ConversationList{IDs: append([]string(nil), ids...), Cached: true, Version: version}
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
