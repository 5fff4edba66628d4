package sync_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure a reconnect storm that Redis knows nothing of (the devices' first connection, or a
// Redis that lost its state) reads the store in batches: the commands its start sends do not
// grow with the users beyond one query for each batch of users, on any collection; and that a
// message sent then reaches every subscription once.
func TestColdStormStartBatchesStoreReads(t *testing.T) {
	ctx := context.Background()
	r := newStormRig(t)
	l := imsync.NewLedger(r.store, cache.New(r.rdb, cache.Options{}), imsync.Options{})

	const users, perUser = 120, 2
	members := stormGroup(t, l, "cold", "c", users)
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
	if err := r.rs.FlushAll(); err != nil { // Redis knows nothing: every start reads the store
		t.Fatal(err)
	}
	c := cache.New(r.rdb, cache.Options{})
	l = imsync.NewLedger(r.store, c, imsync.Options{})
	hub := imsync.NewHub(l.Events(), c, imsync.HubOptions{})
	t.Cleanup(func() { _ = hub.Close() })
	r.mongo.Reset()

	events := make(chan deviceEvent, 4*users*perUser)
	subs := storm(t, hub, members, perUser, events)
	// A list is one user's document, found by _id (on FerretDB one find each, never a scan of
	// every user's entries); the conversations' seqs are read in batches whatever the number
	// of users; a user's read state in each of their groups is still one find by _id each on
	// FerretDB (docs/performance.md).
	if n := r.mongo.Count(chunkstore.CollectionUserConversation, "find", "aggregate", "count"); n != 0 {
		t.Errorf("the cold storm's start sent %d queries of the list entries, want the lists found by _id", n)
	}
	if n := r.mongo.Count(chunkstore.CollectionUserLists, "find"); n > users*perUser {
		t.Errorf("the cold storm's start sent %d finds of list documents for %d devices, want at most one each", n, users*perUser)
	}
	// How many users a query serves depends on how the starts spread over the queries' time;
	// the code before sent several a user.
	const usersPerQuery = 4
	for _, coll := range []string{chunkstore.CollectionSeqs, chunkstore.CollectionGroupMember} {
		n := r.mongo.Count(coll, "find", "aggregate", "count")
		t.Logf("the cold storm's start: %d queries of %s for %d users", n, coll, users)
		if n > users/usersPerQuery {
			t.Errorf("the cold storm's start sent %d queries of %s for %d users, want at most one per %d users", n, coll, users, usersPerQuery)
		}
	}
	t.Logf("the cold storm's start: %d MongoDB commands in all, %d finds of %s", r.mongo.Total(), r.mongo.Count(chunkstore.CollectionUserSeqs, "find"), chunkstore.CollectionUserSeqs)

	sendToGroup(t, l, "sg_cold", members[0].UserID, 2)
	eachDeviceGetsOnce(t, events, len(subs), "sg_cold", 2)
}
