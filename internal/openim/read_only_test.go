package openim_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// Every read the adapter offers, over a deployment with every kind of record, leaves
// OpenIM's MongoDB and Redis exactly as they were: same collections, indexes and documents,
// same keys, contents and TTLs (none refreshed), and only read commands on the wire.
func TestNothingIsEverWritten(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("1")),
		openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("2")),
		openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("3")))
	d.Revoke(chat, 1, openimtest.Revoke{UserID: "a"})
	d.DeleteForMe(chat, "b", 2)
	d.DeleteForEveryone(chat, 3)
	d.SendInFlight(chat, openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("4")))
	d.SetReadSeq(chat, "b", 2)
	d.PersistReadSeq(chat, "b", 1)
	d.CacheReadSeq(chat, "a")
	d.CacheMinSeq(chat)
	d.CacheUserMinSeq(chat, "b")
	d.CacheUserMaxSeq(chat, "b")
	d.AddGroupMember("g", "a", openimtest.RoleOwner)
	d.AddGroupMember("g", "b", openimtest.RoleMember)
	d.Send("sg_g", openimtest.Group("a", "g", openimtest.ContentText, openimtest.TextContent("g")))
	d.QuitGroup("g", "b")
	d.Send("si_a_c", openimtest.Single("a", "c", openimtest.ContentText, openimtest.TextContent("c")))
	d.LoseSeqCache("si_a_c") // the max seq fallback reads chunks
	token := d.Login("a", 1, 30)

	before := d.Snapshot()
	admin := redis.NewClient(&redis.Options{Addr: d.redis.Addr()})
	defer admin.Close()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	commands := map[string]bool{}
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		commands[e.CommandName] = true
		mu.Unlock()
	}}
	db := d.mongo.Connect(t, monitor)
	rdb := redis.NewClient(&redis.Options{Addr: d.redis.Addr()})
	defer rdb.Close()
	s, err := openim.Open(ctx, db, rdb, openim.Options{Secret: d.Secret})
	if err != nil {
		t.Fatal(err)
	}
	convs := []string{chat, "sg_g", "si_a_c", "n_a_b", "n_g", "n_a_a", "si_x_y"}
	for _, user := range []string{"a", "b"} {
		if _, err := s.States(ctx, user, convs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CanRead(ctx, user, convs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserConversations(ctx, user); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, 1)}, {DocID: im.DocID("sg_g", 1)}, {DocID: "si_a_c:0"}, {DocID: "si_x_y:0"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.VerifyToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	_, _, _ = s.VerifyToken(ctx, "forged.token.here")

	stats, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{"hmget": true, "hget": true, "ping": true, "info": true, "hello": true,
		"client|setinfo": true, "client|setname": true, "config|resetstat": true}
	var redisCmds []string
	for _, line := range strings.Split(stats, "\n") {
		name, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, ":")
		redisCmds = append(redisCmds, name)
		if !readOnly[name] {
			t.Errorf("Redis ran %q", name)
		}
	}
	sort.Strings(redisCmds)
	t.Logf("Redis commands run: %v", redisCmds)
	mu.Lock()
	for name := range commands {
		switch name {
		case "find", "getMore", "killCursors", "listCollections", "endSessions":
		default:
			t.Errorf("MongoDB ran %q", name)
		}
	}
	mu.Unlock()

	mustNoDiff(t, before, d.Snapshot())
}
