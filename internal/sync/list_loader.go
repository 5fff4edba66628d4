package sync

import (
	"context"
	"time"

	"github.com/graph-gophers/dataloader/v7"
)

// Conversation lists missing from Redis are read from MongoDB for many users at once. A
// list is a query by user_id, which FerretDB answers with a scan of the collection: when a
// big group's devices connect at once with cold caches, one scan per user would make the
// cost of the start grow with the square of the group. The ledger's loader gathers the users
// whose lists are asked for within listWait into one query of up to listBatch users.
const (
	listWait  = 5 * time.Millisecond
	listBatch = 200
	// listTimeout bounds one batch's query: the batch serves many callers, so it runs on a
	// context of its own, not the first caller's.
	listTimeout = 30 * time.Second
)

// storedList is one user's list as MongoDB holds it; Truncated when it has more than
// MaxConversationsPerUser entries (such a list is not cached: it names an arbitrary part).
type storedList struct {
	IDs       []string
	Truncated bool
}

func (l *Ledger) newListLoader() *dataloader.Loader[string, storedList] {
	return dataloader.NewBatchedLoader(l.loadLists,
		dataloader.WithWait[string, storedList](listWait),
		dataloader.WithBatchCapacity[string, storedList](listBatch),
		dataloader.WithCache[string, storedList](&dataloader.NoCache[string, storedList]{}))
}

// loadLists is the loader's batch function: one MongoDB query for every user of the batch.
func (l *Ledger) loadLists(ctx context.Context, userIDs []string) []*dataloader.Result[storedList] {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listTimeout)
	defer cancel()
	lists, truncated, err := l.store.FindUsersConversations(ctx, userIDs, MaxConversationsPerUser)
	out := make([]*dataloader.Result[storedList], len(userIDs))
	for i, u := range userIDs {
		if err != nil {
			out[i] = &dataloader.Result[storedList]{Error: err}
			continue
		}
		out[i] = &dataloader.Result[storedList]{Data: storedList{IDs: lists[u], Truncated: truncated[u]}}
	}
	return out
}
