package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure the conversation lists and read state of many users that Redis does not hold are
// read from MongoDB together: a big group's devices starting at once must not cost one scan
// of a collection each.
func TestColdConversationListsAreReadTogether(t *testing.T) {
	ctx := context.Background()
	var finds, seqFinds atomic.Int64
	store, err := chunkstore.Open(ctx, testenv.Mongo(t).Connect(t, chunkstore.StartedMonitor(func(_ context.Context, cmd, coll string) {
		switch {
		case cmd == "find" && coll == chunkstore.CollectionUserConversation:
			finds.Add(1)
		case cmd == "find" && coll == chunkstore.CollectionUserSeqs:
			seqFinds.Add(1)
		}
	})))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	l := imsync.NewLedger(store, cache.New(rdb, cache.Options{}), imsync.Options{})
	const n = 300
	members := make([]im.GroupMember, n)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("cold-%03d", i), Role: im.RoleMember}
	}
	if err := l.SetGroup(ctx, "cold", members); err != nil {
		t.Fatal(err)
	}
	finds.Store(0)
	var wg gosync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			states, err := l.UserConversations(ctx, m.UserID)
			if err != nil {
				t.Error(err)
				return
			}
			if len(states) != 0 {
				t.Errorf("%s: %d conversations with messages, want none", m.UserID, len(states))
			}
		}()
	}
	wg.Wait()
	// Each user's list is read once and cached: a second round reads none.
	first := finds.Load()
	for _, m := range members[:10] {
		if _, err := l.UserConversations(ctx, m.UserID); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d cold lists read with %d MongoDB queries", n, first)
	if first > n/20 {
		t.Errorf("%d cold conversation lists took %d MongoDB queries, want them read together (at most %d)", n, first, n/20)
	}
	if again := finds.Load() - first; again != 0 {
		t.Errorf("lists read again after they were cached: %d queries", again)
	}
	seqFinds.Store(0)
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Users whose read state no earlier call cached.
			if _, err := l.States(ctx, "other-"+m.UserID, []string{"sg_cold", "n_sg_cold"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// On FerretDB the store reads documents by _id one find each (its $in decodes the whole
	// collection), so read together means each of the 2n read states read once, by the
	// loader's batches, never once per request that asked for it.
	t.Logf("%d users' cold read state read with %d MongoDB queries", n, seqFinds.Load())
	if got := seqFinds.Load(); got > 2*n {
		t.Errorf("%d users' cold read state took %d MongoDB queries, want each of the %d read states read once", n, got, 2*n)
	}
	lists, _, err := store.FindUsersConversations(ctx, []string{"cold-000", "cold-299", "nobody"}, 10)
	if err != nil || len(lists["cold-000"]) != 2 || len(lists["cold-299"]) != 2 || len(lists["nobody"]) != 0 {
		t.Errorf("FindUsersConversations: %v, %v; want both group conversations for each member", lists, err)
	}
}
