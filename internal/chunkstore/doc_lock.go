package chunkstore

import (
	"sort"
	"sync"
)

// docLocks serialises, within this process, the updates that target the same document.
//
// MongoDB applies each update to a document atomically. FerretDB 1.24 does not: its SQLite
// handler reads the matching document, applies the update in memory and writes the whole
// document back, with no transaction around the three steps (FerretDB issue #3040). Two
// concurrent updates of one chunk then lose one of the writes, and the "slot still empty"
// condition of a slot write no longer protects the slot; two concurrent $max updates can lower
// a seq. Inserts are atomic there too (the unique index decides), so only updates take these
// locks. This makes one gateway process (the embedded default) safe; with MongoDB the locks
// cost nothing beyond what the server's own document lock already serialises.
var docLocks = keyLocks{m: map[string]*keyLock{}}

type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks every key (in sorted order, so that two multi-key callers cannot deadlock) and
// returns the function that unlocks them.
func (l *keyLocks) lock(keys ...string) (unlock func()) {
	keys = append([]string(nil), keys...)
	sort.Strings(keys)
	held := make([]string, 0, len(keys))
	for i, k := range keys {
		if i > 0 && k == keys[i-1] {
			continue
		}
		l.mu.Lock()
		kl := l.m[k]
		if kl == nil {
			kl = &keyLock{}
			l.m[k] = kl
		}
		kl.refs++
		l.mu.Unlock()
		kl.mu.Lock()
		held = append(held, k)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, k := range held {
			kl := l.m[k]
			kl.mu.Unlock()
			if kl.refs--; kl.refs == 0 {
				delete(l.m, k)
			}
		}
	}
}

// lockDocs locks the documents of coll that the keys name.
func (s *Store) lockDocs(coll string, keys ...string) (unlock func()) {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = s.db.Name() + "\x00" + coll + "\x00" + k
	}
	return docLocks.lock(full...)
}
