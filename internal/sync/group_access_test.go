package sync_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	imsync "github.com/msggate/msggate/internal/sync"
)

// groupAccess is a ledger whose MongoDB commands are counted, with its cache and Redis.
type groupAccess struct {
	ctx    context.Context
	ledger *imsync.Ledger
	store  *chunkstore.Store
	cache  *cache.Cache
	redis  *testenv.RedisServer
	mongo  *testenv.MongoCommands
}

func newGroupAccess(t *testing.T) *groupAccess {
	t.Helper()
	a := &groupAccess{ctx: context.Background(), mongo: &testenv.MongoCommands{}, redis: testenv.Redis(t)}
	var err error
	a.store, err = chunkstore.Open(a.ctx, testenv.Mongo(t).Connect(t, a.mongo.Monitor()))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: a.redis.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	a.cache = cache.New(rdb, cache.Options{})
	a.ledger = imsync.NewLedger(a.store, a.cache, imsync.Options{})
	return a
}

// canRead is the ledger's answer for user and sg_<group>, failing the test on an error.
func (a *groupAccess) canRead(t *testing.T, user, group string) bool {
	t.Helper()
	got, err := a.ledger.CanRead(a.ctx, user, []string{"sg_" + group})
	if err != nil {
		t.Fatalf("CanRead(%s, sg_%s): %v", user, group, err)
	}
	return got[0]
}

// Ensure a member's access is read from MongoDB once, by their own document, however large
// the group, and then from Redis with no MongoDB command; and that a group's members are
// never loaded whole to answer for one of them.
func TestGroupAccessReadsOneMembershipOnce(t *testing.T) {
	a := newGroupAccess(t)
	members := []im.GroupMember{{UserID: "owner", Role: im.RoleOwner}}
	for i := range 500 {
		members = append(members, im.GroupMember{UserID: fmt.Sprintf("m%03d", i), Role: im.RoleMember})
	}
	if err := a.ledger.SetGroup(a.ctx, "big", members); err != nil {
		t.Fatal(err)
	}
	a.mongo.Reset()
	if !a.canRead(t, "m123", "big") || a.canRead(t, "eve", "big") {
		t.Fatal("cold: m123 must read the group, eve must not")
	}
	if got := a.mongo.All(); got["find group_member"] != 2 || len(got) != 1 {
		t.Errorf("cold reads sent %v, want one find on group_member each", got)
	}
	a.mongo.Reset()
	for range 3 {
		if !a.canRead(t, "m123", "big") || a.canRead(t, "eve", "big") {
			t.Fatal("warm: m123 must read the group, eve must not")
		}
	}
	if role, err := a.ledger.Role(a.ctx, "owner", im.Conversation{ID: "sg_big", GroupID: "big"}); err != nil || role != im.RoleOwner {
		t.Errorf("owner's role: %d, %v", role, err)
	}
	a.mongo.Reset()
	if role, err := a.ledger.Role(a.ctx, "owner", im.Conversation{ID: "sg_big", GroupID: "big"}); err != nil || role != im.RoleOwner {
		t.Errorf("owner's role, warm: %d, %v", role, err)
	}
	if got := a.mongo.All(); len(got) != 0 {
		t.Errorf("warm reads sent %v to MongoDB, want nothing", got)
	}
	rdb := redis.NewClient(&redis.Options{Addr: a.redis.Addr()})
	defer rdb.Close()
	if n := rdb.HLen(a.ctx, "msggate:{g:big}:members").Val(); n != 4 {
		t.Errorf("the group's cached memberships hold %d fields, want 4: the version, m123, eve and owner", n)
	}
}

// Ensure a writer that stopped between its MongoDB write and the release of its hold (the
// release's round trip failed, or its process died) leaves no stale answer: the users it held
// are read from MongoDB, on every read, until a later change or the hash's expiry.
func TestHeldMembershipIsReadFromMongoDB(t *testing.T) {
	a := newGroupAccess(t)
	if err := a.ledger.SetGroup(a.ctx, "g", []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleMember}}); err != nil {
		t.Fatal(err)
	}
	if !a.canRead(t, "bob", "g") {
		t.Fatal("bob, a member, cannot read the group")
	}
	// What SetGroup removing bob does up to the release, which never comes.
	if err := a.cache.HoldMemberships(a.ctx, "g", []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	before, err := a.store.GroupMembers(a.ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.store.ApplyGroupMembers(a.ctx, "g", before, []chunkstore.GroupMember{{GroupID: "g", UserID: "alice", Role: im.RoleOwner}}); err != nil {
		t.Fatal(err)
	}
	a.mongo.Reset()
	for range 2 {
		if a.canRead(t, "bob", "g") {
			t.Fatal("bob reads the group after his removal was written")
		}
	}
	if n := a.mongo.Count("group_member", "find"); n != 2 {
		t.Errorf("%d finds on group_member for two reads of a held membership, want 2 (nothing cached)", n)
	}
	// The next change of the group settles it.
	if err := a.ledger.SetGroup(a.ctx, "g", []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleAdmin}}); err != nil {
		t.Fatal(err)
	}
	if !a.canRead(t, "bob", "g") {
		t.Fatal("bob, added again, cannot read the group")
	}
	a.mongo.Reset()
	if !a.canRead(t, "bob", "g") || a.mongo.Count("group_member", "find") != 0 {
		t.Error("bob's membership is not cached again after the next change")
	}
}

// Ensure a Redis outage never reads as "member" or "not a member": access is decided by
// MongoDB while Redis is down, and a change of the group fails before it writes anything,
// so that no cached membership goes stale meanwhile.
func TestGroupAccessDuringARedisOutage(t *testing.T) {
	a := newGroupAccess(t)
	if err := a.ledger.SetGroup(a.ctx, "g", []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}, {UserID: "bob", Role: im.RoleMember}}); err != nil {
		t.Fatal(err)
	}
	if !a.canRead(t, "bob", "g") || a.canRead(t, "eve", "g") {
		t.Fatal("before the outage: bob must read the group, eve must not")
	}
	a.redis.Stop()
	a.mongo.Reset()
	if !a.canRead(t, "bob", "g") || a.canRead(t, "eve", "g") {
		t.Error("during the outage: bob must read the group, eve must not")
	}
	if n := a.mongo.Count("group_member", "find"); n != 2 {
		t.Errorf("during the outage: %d finds on group_member, want 2 (MongoDB decides)", n)
	}
	a.mongo.Reset()
	if err := a.ledger.SetGroup(a.ctx, "g", []im.GroupMember{{UserID: "alice", Role: im.RoleOwner}}); err == nil {
		t.Error("a group change succeeded with Redis down")
	}
	if n := a.mongo.Writes("group_member") + a.mongo.Writes("user_conversation"); n != 0 {
		t.Errorf("a group change that failed on Redis wrote %d times to MongoDB, want 0", n)
	}
	a.redis.Start()
	if !a.canRead(t, "bob", "g") {
		t.Error("after the outage: bob, still a member, cannot read the group")
	}
}
