package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure the gateway runs on a three-master Redis Cluster given as a redis+cluster:// URL:
// sends get consecutive seqs, reads and unread counts are exact, mark-read moves them, a
// conversation list gathers state from several masters, and after the cluster loses every key
// the next send continues the seqs.
func TestGatewayOnRedisCluster(t *testing.T) {
	cluster := testenv.RedisCluster(t)
	g := gatewaytest.StartOnCluster(t, cluster, testenv.Mongo(t))
	alice, bob := g.Token("alice"), g.Token("bob")

	for i, content := range []string{"one", "two", "three"} {
		m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": content})
		if m.ConversationID != "si_alice_bob" || m.Seq != int64(i+1) || m.Status != "OK" {
			t.Fatalf("send %d: %+v, want seq %d in si_alice_bob", i+1, m, i+1)
		}
	}
	if trips := g.RoundTrips.Take(); len(trips) == 0 {
		t.Fatal("the Redis hook saw no calls: the gateway is not using the cluster client it was given")
	}

	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 3 || c.ReadSeq != 0 || c.UnreadCount != 3 ||
		c.LastMessage == nil || c.LastMessage.Content == nil || *c.LastMessage.Content != "three" {
		t.Fatalf("bob's conversation: %+v, want maxSeq 3, 3 unread, last message \"three\"", c)
	}
	var read struct{ Messages []gatewaytest.Message }
	g.Query(bob, gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2, 3}}, &read)
	if len(read.Messages) != 3 {
		t.Fatalf("messages: got %d, want 3", len(read.Messages))
	}
	for i, m := range read.Messages {
		if want := []string{"one", "two", "three"}[i]; m.Seq != int64(i+1) || m.Status != "OK" || m.Content == nil || *m.Content != want {
			t.Errorf("message %d: %+v, want %q", i+1, m, want)
		}
	}

	const mark = `mutation($c: ID!, $r: Int64) { markConversationRead(conversationID: $c, readSeq: $r) { readSeq unreadCount maxSeq } }`
	var marked struct{ MarkConversationRead gatewaytest.Conversation }
	g.Query(bob, mark, map[string]any{"c": "si_alice_bob", "r": 2}, &marked)
	if c := marked.MarkConversationRead; c.ReadSeq != 2 || c.UnreadCount != 1 || c.MaxSeq != 3 {
		t.Fatalf("markConversationRead to 2: %+v, want readSeq 2, 1 unread", c)
	}
	var viewer struct{ Viewer struct{ TotalUnread int64 } }
	g.Query(bob, `{ viewer { totalUnread } }`, nil, &viewer)
	if viewer.Viewer.TotalUnread != 1 {
		t.Errorf("bob's totalUnread %d, want 1", viewer.Viewer.TotalUnread)
	}

	// Hash tags put si_alice_bob, alice and bob on the second master, si_alice_carol on the
	// third and carol on the first: alice's conversation list reads state from two masters.
	if m := g.SendGQL(g.Token("carol"), map[string]any{"recvID": "alice", "contentType": 101, "content": "hi"}); m.ConversationID != "si_alice_carol" || m.Seq != 1 {
		t.Fatalf("carol's send: %+v", m)
	}
	var list struct {
		Viewer struct {
			TotalUnread   int64
			Conversations struct{ Nodes []gatewaytest.Conversation }
		}
	}
	g.Query(alice, `{ viewer { totalUnread conversations { nodes { id maxSeq readSeq unreadCount } } } }`, nil, &list)
	if got := list.Viewer.Conversations.Nodes; list.Viewer.TotalUnread != 1 || len(got) != 2 ||
		got[0].ID != "si_alice_carol" || got[0].UnreadCount != 1 || got[1].ID != "si_alice_bob" || got[1].MaxSeq != 3 || got[1].UnreadCount != 0 {
		t.Errorf("alice's conversations: total unread %d, %+v; want si_alice_carol (1 unread) then si_alice_bob (maxSeq 3, none unread)", list.Viewer.TotalUnread, got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holding := 0
	for _, addr := range cluster.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		n, err := node.DBSize(ctx).Result()
		_ = node.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			holding++
		}
	}
	if holding != 3 {
		t.Errorf("the gateway's keys sit on %d master(s), want all three", holding)
	}

	// A cluster that loses every key (all masters restarted without persistence) loses no seq.
	cluster.FlushAll(t)
	if m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "four"}); m.Seq != 4 {
		t.Fatalf("first send after the flush got seq %d, want 4", m.Seq)
	}
	if c := g.Conversation(bob, "si_alice_bob"); c.MaxSeq != 4 || c.ReadSeq != 2 || c.UnreadCount != 2 {
		t.Errorf("bob after the flush: %+v, want maxSeq 4, readSeq 2, 2 unread", c)
	}
}
