package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openimsdk/protocol/sdkws"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

// openIMWithFeed is an OpenIM deployment (openimtest writes its stores as OpenIM does), its
// Kafka (kfake; openimfeedtest produces toPush records as OpenIM's msgtransfer does), and a
// gateway in OpenIM mode following that Kafka.
type openIMWithFeed struct {
	*gatewaytest.OpenIMGateway
	push *openimfeedtest.Producer
}

func startOpenIMWithFeed(t *testing.T) *openIMWithFeed { return startOpenIMWithFeedTuned(t, nil) }

// startOpenIMWithFeedTuned is startOpenIMWithFeed with the gateway's configuration changed by
// tune (nil: as is).
func startOpenIMWithFeedTuned(t *testing.T, tune func(*gateway.Config)) *openIMWithFeed {
	t.Helper()
	brokers := openimfeedtest.StartKafka(t, openimfeedtest.KafkaOptions{})
	g := gatewaytest.StartOpenIM(t, func(c *gateway.Config) {
		c.OpenIM.Feed.Brokers = strings.Join(brokers, ",")
		c.OpenIM.Feed.GapFillInterval = 250 * time.Millisecond
		c.Handler.RateLimit = -1
		if tune != nil {
			tune(c)
		}
	})
	return &openIMWithFeed{OpenIMGateway: g, push: openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers})}
}

// another opens a second gateway instance over the same deployment, Redis and Kafka.
func (w *openIMWithFeed) another(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	cfg := w.Gateway.Config
	cfg.Addr = "127.0.0.1:0"
	return gatewaytest.New(t, cfg)
}

// pushed is the MsgData OpenIM pushes for a message openimtest stored at seq.
func pushed(m *openimtest.MsgData, seq int64) *sdkws.MsgData {
	return &sdkws.MsgData{SendID: m.SendID, RecvID: m.RecvID, GroupID: m.GroupID, ClientMsgID: m.ClientMsgID,
		ServerMsgID: m.ServerMsgID, SenderPlatformID: m.SenderPlatformID, SessionType: m.SessionType, MsgFrom: m.MsgFrom,
		ContentType: m.ContentType, Content: []byte(m.Content), Seq: seq, SendTime: m.SendTime, CreateTime: m.CreateTime}
}

var headers = openimfeedtest.Headers{OperationID: "test-op", OpUserID: "alice", Platform: "Android"}

// nextEvent reads c's next event within limit, or fails.
func nextEvent(t *testing.T, c *gatewaytest.WS, limit time.Duration) model.SyncEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("no event within %s: %v", limit, err)
	}
	if m["type"] != "next" {
		t.Fatalf("got %v, want an event", m)
	}
	var p struct {
		Data struct {
			SyncEvents model.SyncEvent `json:"syncEvents"`
		} `json:"data"`
	}
	remarshal(t, m["payload"], &p)
	return p.Data.SyncEvents
}

// Ensure a device subscribed through msggate in OpenIM mode sees, within 1 s, what OpenIM's
// Kafka tells: a new message (and one whose record was lost, from OpenIM's stores), a revoke,
// a read on another device and a delete for everyone, with OpenIM's numbers; a redelivered
// record adds nothing; the next read shows the revoke; and syncDifference from the summary's
// token replays exactly that on a second instance after the first is gone.
func TestOpenIMSyncFromKafka(t *testing.T) {
	w := startOpenIMWithFeed(t)
	conv := openimtest.SingleConversationID("alice", "bob")
	bob := w.IM.Login("bob", 2, 7)
	first := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("hello"))
	s1 := w.IM.Send(conv, first)[0]

	var state struct {
		SyncState struct {
			Token string `json:"token"`
		} `json:"syncState"`
	}
	w.Query(bob, `{ syncState { token } }`, nil, &state)
	if state.SyncState.Token == "" {
		t.Fatal("syncState gave no token in OpenIM mode with the feed")
	}
	c := gatewaytest.ConnectWS(t, w.URL, bob, gatewaytest.WSOptions{})
	c.Subscribe(&state.SyncState.Token)

	// The feed's consumer group joins in the background: the first record may be produced
	// before it reads, so it is produced again until it is seen (a second copy adds nothing).
	deadline := time.Now().Add(30 * time.Second)
	var ev model.SyncEvent
	for {
		w.push.PushMessage(context.Background(), pushed(first, s1), headers)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := c.Read(ctx)
		cancel()
		if err == nil {
			var p struct {
				Data struct {
					SyncEvents model.SyncEvent `json:"syncEvents"`
				} `json:"data"`
			}
			remarshal(t, m["payload"], &p)
			ev = p.Data.SyncEvents
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed delivered nothing within 30 s")
		}
	}
	if ev.Type != model.SyncEventTypeNewMessage || ev.Seq == nil || *ev.Seq != s1 {
		t.Fatalf("first event %+v, want NEW_MESSAGE %d", ev, s1)
	}

	second := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("again"))
	s2 := w.IM.Send(conv, second)[0]
	sent := time.Now()
	w.push.PushMessage(context.Background(), pushed(second, s2), headers)
	w.push.PushMessage(context.Background(), pushed(second, s2), headers) // redelivered
	ev = nextEvent(t, c, time.Second)
	t.Logf("a new message reached the device %s after its record", time.Since(sent))
	if ev.Type != model.SyncEventTypeNewMessage || *ev.Seq != s2 || ev.UnreadCount == nil || *ev.UnreadCount != 2 {
		t.Fatalf("got %+v, want NEW_MESSAGE %d with 2 unread", ev, s2)
	}

	// A message whose record never reaches Kafka comes from OpenIM's stores.
	lost := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("lost"))
	s3 := w.IM.Send(conv, lost)[0]
	ev = nextEvent(t, c, 2*time.Second)
	if ev.Type != model.SyncEventTypeNewMessage || *ev.Seq != s3 {
		t.Fatalf("got %+v, want NEW_MESSAGE %d from the gap fill", ev, s3)
	}

	// alice revokes her first message.
	w.IM.Revoke(conv, s1, openimtest.Revoke{Role: 0, UserID: "alice"})
	w.push.PushNotification(context.Background(), openimfeedtest.Revoke("alice", pushed(first, s1), conv, s1, 1), headers)
	ev = nextEvent(t, c, time.Second)
	if ev.Type != model.SyncEventTypeRevoke || *ev.Seq != s1 {
		t.Fatalf("got %+v, want REVOKE %d", ev, s1)
	}
	if got := messagesOf(w.OpenIMGateway, bob, conv, s1); len(got) != 1 || got[0].Status != "REVOKED" {
		t.Fatalf("after the revoke's record, seq %d reads %+v, want REVOKED", s1, got)
	}

	// bob reads everything on another device.
	w.IM.SetReadSeq(conv, "bob", s3)
	w.push.PushNotification(context.Background(), openimfeedtest.MarkAsReadSingle("bob", "alice", conv, []int64{s1, s2, s3}, s3, 2), headers)
	ev = nextEvent(t, c, time.Second)
	if ev.Type != model.SyncEventTypeRead || ev.ReadSeq == nil || *ev.ReadSeq != s3 || *ev.UnreadCount != 0 {
		t.Fatalf("got %+v, want READ up to %d with nothing unread", ev, s3)
	}

	// alice deletes her second message for everyone.
	w.IM.DeleteForEveryone(conv, s2)
	w.push.PushNotification(context.Background(), openimfeedtest.DeleteForEveryone("alice", "bob", openimtest.SingleChatType, conv, []int64{s2}, 3), headers)
	ev = nextEvent(t, c, time.Second)
	if ev.Type != model.SyncEventTypeDelete || len(ev.Seqs) != 1 || ev.Seqs[0] != s2 {
		t.Fatalf("got %+v, want DELETE %d", ev, s2)
	}

	// The first instance goes; a second one replays the same events from the summary's token.
	_ = w.Gateway.Gateway.Close()
	other := w.another(t)
	var diff struct {
		SyncDifference struct {
			Events []model.SyncEvent `json:"events"`
		} `json:"syncDifference"`
	}
	other.Query(bob, `query($s: String!) { syncDifference(since: $s) { events { type seq seqs readSeq } } }`,
		map[string]any{"s": state.SyncState.Token}, &diff)
	var got []string
	for _, e := range diff.SyncDifference.Events {
		got = append(got, string(e.Type))
	}
	want := []string{"NEW_MESSAGE", "NEW_MESSAGE", "NEW_MESSAGE", "REVOKE", "READ", "DELETE"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("syncDifference on the second instance: %v, want %v", got, want)
	}
}

// remarshal turns a decoded JSON value into out's type.
func remarshal(t *testing.T, v any, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatalf("decoding %v: %v", v, err)
	}
}

// Ensure that, with the feed, a warm history page of an OpenIM conversation sends no command
// to OpenIM's MongoDB (its chunks are kept in msggate's cache), and that a revoke made in
// OpenIM shows as REVOKED on the next read once its record arrived.
func TestOpenIMWarmPageFromCache(t *testing.T) {
	w := startOpenIMWithFeed(t)
	conv := openimtest.SingleConversationID("alice", "bob")
	msgs := texts("alice", "bob", "m", 150)
	seqs := w.IM.Send(conv, msgs...)
	w.IM.ToMongo(conv, msgs...)
	bob := w.IM.Login("bob", 2, 7)
	const page = `query($id: ID!) { conversation(id: $id) { history(limit: 100) { messages { seq status } } } }`
	read := func() []message {
		var out struct {
			Conversation conversation `json:"conversation"`
		}
		w.Query(bob, page, map[string]any{"id": conv}, &out)
		return out.Conversation.History.Messages
	}
	if got := read(); len(got) != 100 {
		t.Fatalf("cold page: %d messages, want 100", len(got))
	}
	w.Mongo.Reset()
	if got := read(); len(got) != 100 || got[99].Seq != seqs[149] {
		t.Fatalf("warm page: %d messages", len(got))
	}
	if n := w.Mongo.All(); len(n) != 0 {
		t.Errorf("a warm page sent %v to OpenIM's MongoDB, want nothing", n)
	}

	w.IM.Revoke(conv, seqs[149], openimtest.Revoke{UserID: "alice"})
	if got := read(); got[99].Status == "REVOKED" {
		t.Log("the revoke showed before its record (the cache entry had expired)")
	}
	w.push.PushNotification(context.Background(), openimfeedtest.Revoke("alice", pushed(msgs[149], seqs[149]), conv, seqs[149], 1), headers)
	gatewaytest.WaitFor(t, 30*time.Second, "the revoke shows once its record arrived", func() bool {
		return read()[99].Status == "REVOKED"
	})
}

// Ensure membership in OpenIM mode: a member added to a group (OpenIM gives them its
// conversation) gets JOIN from a token that predates it; a member who quits (OpenIM keeps
// their conversation document) gets LEAVE on their live device as soon as the group's
// notification record arrives, and no event of the group after it; a device on a second
// instance gets the group's events live too.
func TestOpenIMMembershipFromKafka(t *testing.T) {
	w := startOpenIMWithFeed(t)
	other := w.another(t)
	conv := openimtest.GroupConversationID("g1")
	w.IM.CreateGroupChatConversations("g1", "alice", "bob")
	for _, u := range []string{"alice", "bob"} {
		w.IM.AddGroupMember("g1", u, openimtest.RoleMember)
	}
	first := openimtest.Group("alice", "g1", openimtest.ContentText, openimtest.TextContent("one"))
	s1 := w.IM.Send(conv, first)[0]
	bob := w.IM.Login("bob", 2, 7)
	carol := w.IM.Login("carol", 2, 7)
	token := func(tok string) string {
		var out struct {
			SyncState struct {
				Token string `json:"token"`
			} `json:"syncState"`
		}
		w.Query(tok, `{ syncState { token } }`, nil, &out)
		return out.SyncState.Token
	}
	bobTok, carolTok := token(bob), token(carol)
	live := gatewaytest.ConnectWS(t, w.URL, bob, gatewaytest.WSOptions{})
	live.Subscribe(&bobTok)
	elsewhere := gatewaytest.ConnectWS(t, other.URL, bob, gatewaytest.WSOptions{})
	elsewhere.Subscribe(&bobTok)
	untilFollowed(t, w, live, first, s1)
	if ev := nextEvent(t, elsewhere, 2*time.Second); ev.Type != model.SyncEventTypeNewMessage || *ev.Seq != s1 {
		t.Fatalf("the device on the second instance got %+v, want NEW_MESSAGE %d", ev, s1)
	}

	// carol joins.
	w.IM.AddGroupMember("g1", "carol", openimtest.RoleMember)
	w.IM.CreateGroupChatConversations("g1", "carol")
	var diff struct {
		SyncDifference struct {
			Events []model.SyncEvent `json:"events"`
		} `json:"syncDifference"`
	}
	w.Query(carol, `query($s: String!) { syncDifference(since: $s) { events { type conversationID maxSeq } } }`,
		map[string]any{"s": carolTok}, &diff)
	if evs := diff.SyncDifference.Events; len(evs) != 1 || evs[0].Type != model.SyncEventTypeJoin || *evs[0].ConversationID != conv || *evs[0].MaxSeq != s1 {
		t.Fatalf("carol after joining: %+v, want JOIN %s at maxSeq %d", evs, conv, s1)
	}

	// bob quits: OpenIM tells the group.
	w.IM.QuitGroup("g1", "bob")
	w.push.PushNotification(context.Background(), openimfeedtest.Notification{SendID: "bob", RecvID: "g1",
		ContentType: 1504, SessionType: openimtest.ReadGroupChatType, Tips: &sdkws.MemberQuitTips{}}, headers)
	ev := nextEvent(t, live, 2*time.Second)
	if ev.Type != model.SyncEventTypeLeave || *ev.ConversationID != conv {
		t.Fatalf("bob after quitting: %+v, want LEAVE %s", ev, conv)
	}
	after := openimtest.Group("alice", "g1", openimtest.ContentText, openimtest.TextContent("after bob"))
	s2 := w.IM.Send(conv, after)[0]
	w.push.PushMessage(context.Background(), pushed(after, s2), headers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m, err := live.Read(ctx); err == nil {
		t.Fatalf("bob got %v after leaving the group", m)
	}
}

// Ensure a device in OpenIM mode that is in a group whose ID OpenIM allows and msggate's own
// rules do not (team_1, a legacy g_ group) can go on syncing: syncDifference takes the token
// syncState gave, and the one each answer gives, as a subscription does, and answers the
// group's new message.
func TestOpenIMSyncTokenWithOpenIMGroupIDs(t *testing.T) {
	w := startOpenIMWithFeed(t)
	conv := openimtest.GroupConversationID("team_1")
	w.IM.CreateGroupChatConversations("team_1", "alice", "bob")
	w.IM.CreateConversation(openimtest.Conversation{OwnerUserID: "bob", ConversationID: "g_old_2",
		ConversationType: openimtest.WriteGroupChatType, GroupID: "old_2"})
	for _, g := range []string{"team_1", "old_2"} {
		for _, u := range []string{"alice", "bob"} {
			w.IM.AddGroupMember(g, u, openimtest.RoleMember)
		}
	}
	first := openimtest.Group("alice", "team_1", openimtest.ContentText, openimtest.TextContent("one"))
	s1 := w.IM.Send(conv, first)[0]
	bob := w.IM.Login("bob", 2, 7)
	var state struct {
		SyncState struct {
			Token string `json:"token"`
		} `json:"syncState"`
	}
	w.Query(bob, `{ syncState { token } }`, nil, &state)
	token := state.SyncState.Token
	for _, c := range []string{conv, "g_old_2"} {
		if !strings.Contains(token, ","+c+"=") {
			t.Fatalf("bob's token %q follows no stream of %s", token, c)
		}
	}

	const difference = `query($s: String!) { syncDifference(since: $s) { token events { type stream seq } } }`
	var diff struct {
		SyncDifference struct {
			Token  string            `json:"token"`
			Events []model.SyncEvent `json:"events"`
		} `json:"syncDifference"`
	}
	// The feed's consumer group joins in the background: produce until the record is seen.
	gatewaytest.WaitFor(t, 30*time.Second, "the group's message reaches bob's syncDifference", func() bool {
		w.push.PushMessage(context.Background(), pushed(first, s1), headers)
		r := w.Post(bob, difference, map[string]any{"s": token})
		if len(r.Errors) > 0 {
			t.Fatalf("syncDifference from syncState's token %q: %+v", token, r.Errors)
		}
		remarshal(t, r.Data, &diff)
		return len(diff.SyncDifference.Events) > 0
	})
	if evs := diff.SyncDifference.Events; len(evs) != 1 || evs[0].Type != model.SyncEventTypeNewMessage ||
		evs[0].Stream == nil || *evs[0].Stream != conv || *evs[0].Seq != s1 {
		t.Fatalf("bob's difference: %+v, want NEW_MESSAGE %d in %s", evs, s1, conv)
	}

	second := openimtest.Group("alice", "team_1", openimtest.ContentText, openimtest.TextContent("two"))
	s2 := w.IM.Send(conv, second)[0]
	w.push.PushMessage(context.Background(), pushed(second, s2), headers)
	token = diff.SyncDifference.Token
	gatewaytest.WaitFor(t, 10*time.Second, "the second message reaches bob's syncDifference", func() bool {
		w.Query(bob, difference, map[string]any{"s": token}, &diff)
		return len(diff.SyncDifference.Events) > 0
	})
	if evs := diff.SyncDifference.Events; len(evs) != 1 || *evs[0].Seq != s2 {
		t.Fatalf("bob's difference from the token the last one gave: %+v, want NEW_MESSAGE %d", evs, s2)
	}
}
