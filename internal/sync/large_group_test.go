package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure SetGroup creates an im.MaxGroupMembers-member group (a fifth of it under -short) on
// a FerretDB server reached over the MongoDB wire protocol, then changes it (2/5 leave, 1/5
// join, one role changes), and that members and conversation lists read back exactly so.
func TestSetGroupLargeOnFerretDBServer(t *testing.T) {
	n := im.MaxGroupMembers
	if testing.Short() {
		n /= 5
	}
	ctx := context.Background()
	mdb := testenv.Mongo(t)
	db := mdb.Connect(t, nil)
	store, err := chunkstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	mdb.IndexIDs(t)
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	l := imsync.NewLedger(store, cache.New(rdb, cache.Options{}), imsync.Options{})
	user := func(i int) string { return fmt.Sprintf("u%05d", i) }
	want := map[string]int32{}
	set := func() {
		t.Helper()
		var list []im.GroupMember
		for u, r := range want {
			list = append(list, im.GroupMember{UserID: u, Role: r})
		}
		start := time.Now()
		if err := l.SetGroup(ctx, "big", list); err != nil {
			t.Fatal(err)
		}
		t.Logf("set %d members in %v", len(list), time.Since(start).Round(time.Millisecond))
	}
	for i := 0; i < n; i++ {
		want[user(i)] = im.RoleMember
	}
	want[user(0)] = im.RoleOwner
	set()
	check := func() {
		t.Helper()
		ms, err := store.GroupMembers(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		bad := len(ms) != len(want)
		for _, m := range ms {
			if r, ok := want[m.UserID]; !ok || r != m.Role {
				bad = true
			}
		}
		if bad {
			t.Fatalf("%d members read back, want %d, or roles differ", len(ms), len(want))
		}
		for _, u := range []string{user(n / 2), user(2 * n / 5), user(n + 1)} {
			m, err := store.FindGroupMemberships(ctx, u, []string{"big"})
			if r, ok := want[u]; err != nil || m["big"].Role != r || (len(m) == 1) != ok {
				t.Errorf("membership of %s: %+v, %v", u, m, err)
			}
		}
		cur, err := db.Collection(chunkstore.CollectionUserConversation).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var es []chunkstore.UserConversation
		if err := cur.All(ctx, &es); err != nil {
			t.Fatal(err)
		}
		lists := map[string]map[string]bool{}
		for _, e := range es {
			if lists[e.UserID] == nil {
				lists[e.UserID] = map[string]bool{}
			}
			lists[e.UserID][e.ConversationID] = true
		}
		if len(es) != 2*len(want) || len(lists) != len(want) {
			t.Fatalf("%d entries for %d users, want 2 for each of %d members", len(es), len(lists), len(want))
		}
		for u := range want {
			if !lists[u]["sg_big"] || !lists[u]["n_sg_big"] {
				t.Fatalf("%s has %v", u, lists[u])
			}
		}
	}
	check()
	for i := 0; i < 2*n/5; i++ {
		delete(want, user(i))
	}
	for i := n; i < n+n/5; i++ {
		want[user(i)] = im.RoleMember
	}
	want[user(2*n/5)] = im.RoleAdmin
	set()
	check()
}
