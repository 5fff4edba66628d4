package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure a reconnect storm that Redis knows nothing of (the devices' first connection, or a
// Redis that lost its state) reads the store in batches: the commands its start sends do not
// grow with the users beyond one query for each batch of users, on any collection; and that a
// message sent then reaches every subscription once.
func TestColdStormStartBatchesStoreReads(t *testing.T) {
	ctx := context.Background()
	mongo := &testenv.MongoCommands{}
	store, err := chunkstore.Open(ctx, testenv.Mongo(t).Connect(t, mongo.Monitor()))
	if err != nil {
		t.Fatal(err)
	}
	rs := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.New(rdb, cache.Options{})
	l := imsync.NewLedger(store, c, imsync.Options{})

	const users, perUser = 120, 2
	members := make([]im.GroupMember, users)
	for i := range members {
		members[i] = im.GroupMember{UserID: fmt.Sprintf("c%03d", i), Role: im.RoleMember}
	}
	members[0].Role = im.RoleOwner
	if err := l.SetGroup(ctx, "cold", members); err != nil {
		t.Fatal(err)
	}
	// Some members have read the group and have a single chat of their own, so that the
	// store holds read states and lists of more than one conversation to find.
	first := imsync.StoredMessage{ConversationID: "sg_cold", Seq: 1, SendID: members[0].UserID, SendTime: time.Now().UnixMilli()}
	if err := l.RecordStored(ctx, []imsync.StoredMessage{first}); err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	for i := 1; i < users; i += 3 {
		if _, _, err := l.MarkRead(ctx, members[i].UserID, "sg_cold", &one); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.FlushAll(); err != nil { // Redis knows nothing: every start reads the store
		t.Fatal(err)
	}
	c = cache.New(rdb, cache.Options{})
	l = imsync.NewLedger(store, c, imsync.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })
	mongo.Reset()

	events := make(chan int, 4*users*perUser)
	subs := make([]*imsync.Subscription, users*perUser)
	var wg gosync.WaitGroup
	for i := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, err := hub.Subscribe(ctx, members[i%users].UserID)
			if err != nil {
				t.Error(err)
				return
			}
			subs[i] = sub
			go func() {
				_ = sub.Run(nil, func(ctx context.Context, ev im.Event) error {
					if ev.Type == im.EventNewMessage && ev.ConversationID == "sg_cold" && ev.Seq == 2 {
						events <- i
					}
					return nil
				})
			}()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	for deadline := time.Now().Add(time.Minute); hub.LiveSubscribers() < len(subs); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscriptions live after a minute", hub.LiveSubscribers(), len(subs))
		}
	}
	// A list is one user's document, found by _id (on FerretDB one find each, never a scan of
	// every user's entries); the conversations' seqs are read in batches whatever the number
	// of users; a user's read state in each of their groups is still one find by _id each on
	// FerretDB (docs/performance.md).
	if n := mongo.Count(chunkstore.CollectionUserConversation, "find", "aggregate", "count"); n != 0 {
		t.Errorf("the cold storm's start sent %d queries of the list entries, want the lists found by _id", n)
	}
	if n := mongo.Count(chunkstore.CollectionUserLists, "find"); n > users*perUser {
		t.Errorf("the cold storm's start sent %d finds of list documents for %d devices, want at most one each", n, users*perUser)
	}
	// How many users a query serves depends on how the starts spread over the queries' time;
	// the code before sent several a user.
	const usersPerQuery = 4
	for _, coll := range []string{chunkstore.CollectionSeqs, chunkstore.CollectionGroupMember} {
		n := mongo.Count(coll, "find", "aggregate", "count")
		t.Logf("the cold storm's start: %d queries of %s for %d users", n, coll, users)
		if n > users/usersPerQuery {
			t.Errorf("the cold storm's start sent %d queries of %s for %d users, want at most one per %d users", n, coll, users, usersPerQuery)
		}
	}
	t.Logf("the cold storm's start: %d MongoDB commands in all, %d finds of %s", mongo.Total(), mongo.Count(chunkstore.CollectionUserSeqs, "find"), chunkstore.CollectionUserSeqs)

	msg := imsync.StoredMessage{ConversationID: "sg_cold", Seq: 2, SendID: members[0].UserID, SendTime: time.Now().UnixMilli()}
	if err := l.RecordStored(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	if err := l.Events().AnnounceMessages(ctx, []imsync.StoredMessage{msg}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for len(seen) < len(subs) {
		select {
		case i := <-events:
			if seen[i] {
				t.Fatalf("device %d got the message twice", i)
			}
			seen[i] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d devices got the message", len(seen), len(subs))
		}
	}
}
