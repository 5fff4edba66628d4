package openim

import (
	gosync "sync"
	"time"
)

// docMemo keeps, for a short time, what the Store read from OpenIM's MongoDB because OpenIM's
// Redis lacked it: conversation ownership, group membership, seq and seq_user documents. It
// is on only where something tells the Store of OpenIM's changes (Forget, called for each
// conversation the feed reports changed; Options.MemoTTL): a warm page then reads OpenIM's
// MongoDB not at all. A change that reaches MongoDB unreported shows within the TTL. Only
// what grants access is kept (an ownership or membership found), never a refusal, so that a
// new conversation is readable at once.
type docMemo struct {
	ttl time.Duration

	mu      gosync.Mutex
	entries map[memoKey]memoEntry
	// gens counts each conversation's Forget calls: an entry read before a Forget of its
	// conversation is stale even if it was stored after it.
	gens map[string]uint64
}

type memoKey struct {
	kind byte // 'o' ownership, 'm' membership (conv holds the group ID), 's' seq, 'u' seq_user
	user string
	conv string
}

type memoEntry struct {
	value   any
	gen     uint64
	expires time.Time
}

// memoLimit bounds the entries kept; past it, everything is dropped and refilled.
const memoLimit = 200000

func newDocMemo(ttl time.Duration) *docMemo {
	if ttl <= 0 {
		return nil
	}
	return &docMemo{ttl: ttl, entries: map[memoKey]memoEntry{}, gens: map[string]uint64{}}
}

// generation returns conv's generation, to pass to put for what is read from now on.
func (m *docMemo) generation(conv string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gens[conv]
}

func (m *docMemo) get(k memoKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok || e.gen != m.gens[k.conv] || time.Now().After(e.expires) {
		return nil, false
	}
	return e.value, true
}

func (m *docMemo) put(k memoKey, gen uint64, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gens[k.conv] {
		return
	}
	if len(m.entries) >= memoLimit {
		m.entries = map[memoKey]memoEntry{}
	}
	m.entries[k] = memoEntry{value: v, gen: gen, expires: time.Now().Add(m.ttl)}
}

func (m *docMemo) forget(convs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.gens) >= memoLimit {
		// Dropping the generations would revive entries stored under them: drop those too.
		m.gens = map[string]uint64{}
		m.entries = map[memoKey]memoEntry{}
	}
	for _, c := range convs {
		m.gens[c]++
	}
}

// Forget marks what the Store keeps of these conversations (with Options.MemoTTL) as stale:
// their seq and seq_user documents, and ownership of them. Group IDs may be given too, for
// their membership.
func (s *Store) Forget(conversationIDs ...string) {
	if s.memo != nil {
		s.memo.forget(conversationIDs)
	}
}
