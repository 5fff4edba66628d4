package sync

import (
	"context"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/msggate/msggate/internal/chunkstore"
)

// What Redis misses of conversation lists, conversations' seqs and users' read state is read
// from MongoDB for many users at once. A list is a query by user_id, which FerretDB answers
// with a scan of the collection, and a query for several _ids scans too: when a big group's
// devices connect at once with cold caches, one query per user would make the cost of the
// start grow with the square of the group. Lists and seqs go through a storeQueue (one query
// at a time, taking everything asked for meanwhile, up to storeBatch keys); read states
// through a loader that gathers what is asked for within storeWait into a query of up to
// storeBatch keys. The wait is long for a loader (only reads Redis missed take it) because
// devices arrive spread out: a short wait sends a query for each few users.
const (
	storeWait  = 50 * time.Millisecond
	storeBatch = 500
	// storeBatchTimeout bounds one batch's query: the batch serves many callers, so it runs
	// on a context of its own, not the first caller's.
	storeBatchTimeout = 30 * time.Second
)

// storedList is one user's list as MongoDB holds it; Truncated when it has more than
// MaxConversationsPerUser entries (such a list is not cached: it names an arbitrary part).
type storedList struct {
	IDs       []string
	Truncated bool
}

// newStoreLoader is a loader of the ledger's kind: batched by time and size, and without a
// cache (Redis is the cache; a loader that kept answers would serve them stale).
func newStoreLoader[K comparable, V any](batch dataloader.BatchFunc[K, V]) *dataloader.Loader[K, V] {
	return dataloader.NewBatchedLoader(batch,
		dataloader.WithWait[K, V](storeWait),
		dataloader.WithBatchCapacity[K, V](storeBatch),
		dataloader.WithCache[K, V](&dataloader.NoCache[K, V]{}))
}

// loadLists is the list queue's read: one MongoDB query for every user of the batch.
func (l *Ledger) loadLists(ctx context.Context, userIDs []string) (map[string]storedList, error) {
	lists, truncated, err := l.store.FindUsersConversations(ctx, userIDs, MaxConversationsPerUser)
	if err != nil {
		return nil, err
	}
	out := make(map[string]storedList, len(userIDs))
	for _, u := range userIDs {
		out[u] = storedList{IDs: lists[u], Truncated: truncated[u]}
	}
	return out, nil
}

// loadUserSeqs is the read-state loader's batch function: one MongoDB query for the batch.
func (l *Ledger) loadUserSeqs(ctx context.Context, keys []chunkstore.UserSeqKey) []*dataloader.Result[chunkstore.UserSeqs] {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeBatchTimeout)
	defer cancel()
	docs, err := l.store.FindUserSeqs(ctx, keys)
	out := make([]*dataloader.Result[chunkstore.UserSeqs], len(keys))
	for i, k := range keys {
		out[i] = &dataloader.Result[chunkstore.UserSeqs]{Data: docs[k], Error: err}
	}
	return out
}

// findUserSeqs reads users' read state in conversations through the loader.
func (l *Ledger) findUserSeqs(ctx context.Context, keys []chunkstore.UserSeqKey) (map[chunkstore.UserSeqKey]chunkstore.UserSeqs, error) {
	if len(keys) == 0 {
		return map[chunkstore.UserSeqKey]chunkstore.UserSeqs{}, nil
	}
	docs, errs := l.userSeqs.LoadMany(ctx, keys)()
	out := make(map[chunkstore.UserSeqKey]chunkstore.UserSeqs, len(keys))
	for i, k := range keys {
		if i < len(errs) && errs[i] != nil {
			return nil, errs[i]
		}
		out[k] = docs[i]
	}
	return out, nil
}
