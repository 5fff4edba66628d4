package openim_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// OpenIM deployments often run Redis Cluster: OpenIM's keys carry no hash tags, so one
// conversation's keys spread over the masters. The pipelined reads still cost one round trip
// as the caller sees it (go-redis sends each master its share at once).
func TestReadsOnARedisCluster(t *testing.T) {
	t.Parallel()
	cluster := testenv.RedisCluster(t)
	m := testenv.Mongo(t)
	fixture := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer fixture.Close()
	d := openimtest.New(t, m.Connect(t, nil), fixture)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("1")),
		openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("2")))
	d.SendInFlight(chat, openimtest.Single("b", "a", openimtest.ContentText, openimtest.TextContent("3")))
	d.AddGroupMember("g", "b", openimtest.RoleMember)
	d.Send("sg_g", openimtest.Group("b", "g", openimtest.ContentText, openimtest.TextContent("g")))
	d.SetReadSeq(chat, "b", 1)
	token := d.Login("b", 2, 1)

	trips := &testenv.RedisRoundTrips{}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer rdb.Close()
	rdb.AddHook(trips)
	s, err := openim.Open(ctx, m.Connect(t, nil), rdb, openim.Options{Secret: d.Secret})
	if err != nil {
		t.Fatal(err)
	}
	trips.Take()

	states, err := s.States(ctx, "b", []string{chat, "sg_g"})
	if err != nil {
		t.Fatal(err)
	}
	if states[0].MaxSeq != 3 || states[0].Unread() != 0 || states[1].MaxSeq != 1 {
		// b sent seq 3, so OpenIM raised b's read seq to 3.
		t.Errorf("states %+v", states)
	}
	chunks, err := s.Chunks(ctx, []im.SeqGroup{{DocID: im.DocID(chat, 1), Seqs: []int64{1, 2, 3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := im.ViewSlot(chat, 3, chunks[0].Slot(3), "a"); v.Status != im.StatusOK || v.Message.SendID != "b" {
		t.Errorf("in-flight seq 3 on a cluster: %+v", v)
	}
	if user, _, err := s.VerifyToken(ctx, token); err != nil || user != "b" {
		t.Errorf("token on a cluster: %q, %v", user, err)
	}
	if got := trips.Take(); len(got) != 3 {
		t.Errorf("States, Chunks and VerifyToken made %d round trips, want 3: %v", len(got), got)
	}
}
