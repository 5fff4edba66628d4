package chunkstore

import (
	"context"
	"slices"
	"sync"
)

// Updates that must not interleave with another update of the same document take that
// document's lock first.
//
// MongoDB applies each update to a document atomically. FerretDB 1.24 does not: its SQLite
// handler reads the matching document, applies the update in memory and writes the whole
// document back, with no transaction around the three steps (FerretDB issue #3040). Two
// concurrent updates of one chunk then lose one of the writes, and the "slot still empty"
// condition of a slot write no longer protects the slot; two concurrent $max updates can lower
// a seq. Inserts are atomic there too (the unique index decides), so only updates take these
// locks.
//
// Every Store serialises its own updates of one document (keyLocks). That makes one process
// safe: the embedded default, whose FerretDB lives in the gateway's process (Options.SoleWriter).
// On a FerretDB that other processes write to as well, a Store also takes a lease document per
// document it updates (leases, in doc_lease.go), which is what makes several gateway instances
// on one FerretDB safe. With MongoDB the process locks cost nothing beyond what the server's
// own document lock already serialises, and no lease is taken.

type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks every key (sorted and without duplicates, so that two multi-key callers cannot
// deadlock) and returns the function that unlocks them.
func (l *keyLocks) lock(keys []string) (unlock func()) {
	for _, k := range keys {
		l.mu.Lock()
		if l.m == nil {
			l.m = map[string]*keyLock{}
		}
		kl := l.m[k]
		if kl == nil {
			kl = &keyLock{}
			l.m[k] = kl
		}
		kl.refs++
		l.mu.Unlock()
		kl.mu.Lock()
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, k := range keys {
			kl := l.m[k]
			kl.mu.Unlock()
			if kl.refs--; kl.refs == 0 {
				delete(l.m, k)
			}
		}
	}
}

// lockDocs locks the documents of coll that the keys name, against this Store's other
// writers and, on a shared FerretDB, against every other process's (leases). The update runs
// with the returned context, which ends before the leases could expire under it; unlock must
// be called once it is done. Waiting for a lease ends with ctx; the error is then
// EUNAVAILABLE.
func (s *Store) lockDocs(ctx context.Context, coll string, keys ...string) (context.Context, func(), error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = coll + "|" + k
	}
	slices.Sort(full)
	full = slices.Compact(full)
	unlock := s.locks.lock(full)
	if s.leases == nil {
		return ctx, unlock, nil
	}
	release, expires, err := s.leases.acquire(ctx, full)
	if err != nil {
		unlock()
		return ctx, nil, err
	}
	// The update must be over before another process may take the leases over; half the
	// lease leaves room for clocks that disagree.
	guarded, cancel := context.WithDeadline(ctx, expires.Add(-s.leases.ttl/2))
	return guarded, func() {
		cancel()
		release()
		unlock()
	}, nil
}
