package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/retention"
)

// Unread mentions, asked through gqlgen's client as an app would: the count on a conversation,
// on the list and in sync, the list of them, and how each change moves them.

const (
	mentionCountQuery = `query($c: ID!, $limit: Int) { conversation(id: $c) { readSeq unreadMentionCount unreadMentions(limit: $limit) { seq status atUserIDs } } viewer { totalUnreadMentions } }`
	mentionListQuery  = `query { viewer { totalUnreadMentions conversations(first: 20) { nodes { id unreadCount unreadMentionCount unreadMentions(limit: 100) { seq } } } } }`
	mentionSyncQuery  = `query { syncState { token totalUnreadMentions conversations { id unreadMentionCount } } }`
	mentionDiffQuery  = `query($since: String!) { syncDifference(since: $since) { token events { type conversationID readSeq unreadCount unreadMentionCount } } }`
)

// mentions is a user's GraphQL client.
type mentions struct {
	t    *testing.T
	c    *client.Client
	user string
	// lenient: a mutation refused (a seq below the user's min seq, say) is no failure.
	lenient bool
}

func mentionClient(t *testing.T, g *gatewaytest.Gateway, user, token string) *mentions {
	c := client.New(g.Handler(), client.AddHeader("Authorization", "Bearer "+token))
	c.SetCustomTarget("/query")
	return &mentions{t: t, c: c, user: user}
}

type mentionAnswer struct {
	Conversation struct {
		ReadSeq            int64
		UnreadMentionCount int64
		UnreadMentions     []struct {
			Seq       int64
			Status    string
			AtUserIDs []string
		}
	}
	Viewer struct{ TotalUnreadMentions int64 }
}

// state returns the user's unread mention count in conv, the seqs unreadMentions lists (limit
// 100) and their total over all conversations.
func (m *mentions) state(conv string) (int64, []int64, int64) {
	m.t.Helper()
	var a mentionAnswer
	if err := m.c.Post(mentionCountQuery, &a, client.Var("c", conv), client.Var("limit", 100)); err != nil {
		m.t.Fatalf("%s: %v", m.user, err)
	}
	var seqs []int64
	for _, msg := range a.Conversation.UnreadMentions {
		if msg.Status != "OK" {
			m.t.Errorf("%s: unreadMentions holds seq %d with status %s", m.user, msg.Seq, msg.Status)
		}
		seqs = append(seqs, msg.Seq)
	}
	return a.Conversation.UnreadMentionCount, seqs, a.Viewer.TotalUnreadMentions
}

// expect checks the count and the list of conv against want, and that the list page and the
// sync summary say the same.
func (m *mentions) expect(conv string, want ...int64) {
	m.t.Helper()
	n, seqs, _ := m.state(conv)
	if n != int64(len(want)) || !slices.Equal(seqs, want) {
		m.t.Errorf("%s in %s: count %d, unreadMentions %v; want %d, %v", m.user, conv, n, seqs, len(want), want)
	}
	if got, listedSeqs := m.listed(conv); got != n || !slices.Equal(listedSeqs, seqs) {
		m.t.Errorf("%s in %s: the list page says %d, %v; the conversation %d, %v", m.user, conv, got, listedSeqs, n, seqs)
	}
	var s struct {
		SyncState struct {
			Token               string
			TotalUnreadMentions int64
			Conversations       []struct {
				ID                 string
				UnreadMentionCount int64
			}
		}
	}
	if err := m.c.Post(mentionSyncQuery, &s); err != nil {
		m.t.Fatal(err)
	}
	for _, c := range s.SyncState.Conversations {
		if c.ID == conv && c.UnreadMentionCount != n {
			m.t.Errorf("%s in %s: the sync summary says %d, the conversation %d", m.user, conv, c.UnreadMentionCount, n)
		}
	}
}

// syncToken returns the token of the user's sync summary.
func (m *mentions) syncToken() string {
	m.t.Helper()
	var s struct{ SyncState struct{ Token string } }
	if err := m.c.Post(`query { syncState { token } }`, &s); err != nil {
		m.t.Fatal(err)
	}
	return s.SyncState.Token
}

// listed returns conv's unreadMentionCount and unreadMentions on the user's list page (-1: not
// on it).
func (m *mentions) listed(conv string) (int64, []int64) {
	m.t.Helper()
	var l struct {
		Viewer struct {
			TotalUnreadMentions int64
			Conversations       struct {
				Nodes []struct {
					ID                              string
					UnreadCount, UnreadMentionCount int64
					UnreadMentions                  []struct{ Seq int64 }
				}
			}
		}
	}
	if err := m.c.Post(mentionListQuery, &l); err != nil {
		m.t.Fatal(err)
	}
	for _, n := range l.Viewer.Conversations.Nodes {
		if n.ID == conv {
			var seqs []int64
			for _, msg := range n.UnreadMentions {
				seqs = append(seqs, msg.Seq)
			}
			return n.UnreadMentionCount, seqs
		}
	}
	return -1, nil
}

func (m *mentions) do(query string, vars ...client.Option) {
	m.t.Helper()
	var out map[string]any
	if err := m.c.Post(query, &out, vars...); err != nil && !m.lenient {
		m.t.Fatalf("%s: %s: %v", m.user, query, err)
	}
}

func (m *mentions) send(group string, at ...string) int64 {
	m.t.Helper()
	var out struct{ SendMessage struct{ Seq int64 } }
	in := map[string]any{"groupID": group, "contentType": 101, "content": fmt.Sprintf("hi %v", at), "atUserIDs": at}
	if err := m.c.Post(`mutation($in: SendMessageInput!) { sendMessage(input: $in) { seq } }`, &out, client.Var("in", in)); err != nil {
		m.t.Fatal(err)
	}
	return out.SendMessage.Seq
}

func (m *mentions) read(conv string, seq int64) {
	m.do(`mutation($c: ID!, $s: Int64) { markConversationRead(conversationID: $c, readSeq: $s) { readSeq } }`, client.Var("c", conv), client.Var("s", seq))
}

func (m *mentions) revoke(conv string, seq int64) {
	m.do(`mutation($c: ID!, $s: Int64!) { revokeMessage(conversationID: $c, seq: $s) { seq } }`, client.Var("c", conv), client.Var("s", seq))
}

func (m *mentions) remove(conv string, forEveryone bool, seqs ...int64) {
	m.do(`mutation($c: ID!, $s: [Int64!]!, $e: Boolean) { deleteMessages(conversationID: $c, seqs: $s, forEveryone: $e) { seq } }`,
		client.Var("c", conv), client.Var("s", seqs), client.Var("e", forEveryone))
}

func (m *mentions) clear(conv string, forEveryone bool) {
	m.do(`mutation($c: ID!, $e: Boolean) { clearConversation(conversationID: $c, forEveryone: $e) { minSeq } }`, client.Var("c", conv), client.Var("e", forEveryone))
}

func setTeam(t *testing.T, g *gatewaytest.Gateway, group string, users ...string) {
	t.Helper()
	members := []im.GroupMember{{UserID: users[0], Role: im.RoleOwner}}
	for _, u := range users[1:] {
		members = append(members, im.GroupMember{UserID: u, Role: im.RoleMember})
	}
	if err := g.Ledger.SetGroup(context.Background(), group, members); err != nil {
		t.Fatal(err)
	}
}

func TestUnreadMentions(t *testing.T) {
	g := gatewaytest.Start(t)
	setTeam(t, g, "team", "alice", "bob", "carol")
	alice, bob, carol := mentionClient(t, g, "alice", g.Token("alice")), mentionClient(t, g, "bob", g.Token("bob")), mentionClient(t, g, "carol", g.Token("carol"))
	const conv = "sg_team"

	alice.send("team", "bob")                           // bob
	alice.send("team", im.AtAllTag)                     // bob, carol
	alice.send("team")                                  // nobody
	bob.send("team", im.AtAllTag)                       // alice, carol (never bob, its sender)
	bob.send("team", "alice", "bob")                    // alice
	s6 := carol.send("team", "bob", im.AtAllTag, "bob") // alice, bob: once each
	alice.send("team", "nobody-in-the-group")           // nobody here
	alice.do(`mutation { sendMessage(input: {recvID: "bob", contentType: 101, content: "dm", atUserIDs: ["bob"]}) { seq } }`)

	t.Run("explicit, AtAllTag, the sender's own", func(t *testing.T) {
		// Sending moves the sender's read seq: bob's sends (4, 5) read 1 and 2 for him, alice's
		// last send everything before it, carol's everything up to 6.
		bob.expect(conv, s6)
		alice.expect(conv)
		carol.expect(conv)
		// A single chat mentions nobody.
		bob.expect("si_alice_bob")
	})

	// From here, alice and carol have unread mentions too: they read back to 0 is impossible
	// (reads only rise), so a second group starts them fresh.
	setTeam(t, g, "crew", "dave", "alice", "carol", "erin")
	dave, erin := mentionClient(t, g, "dave", g.Token("dave")), mentionClient(t, g, "erin", g.Token("erin"))
	const crew = "sg_crew"
	c1 := dave.send("crew", "alice")
	c2 := dave.send("crew", im.AtAllTag)
	c3 := dave.send("crew", "carol", "erin")
	c4 := dave.send("crew", im.AtAllTag, "alice")
	c5 := dave.send("crew", "erin")
	alice.expect(crew, c1, c2, c4)
	carol.expect(crew, c2, c3, c4)
	erin.expect(crew, c2, c3, c4, c5)
	dave.expect(crew)
	t.Run("limit", func(t *testing.T) {
		var a mentionAnswer
		if err := erin.c.Post(mentionCountQuery, &a, client.Var("c", crew), client.Var("limit", 2)); err != nil {
			t.Fatal(err)
		}
		if len(a.Conversation.UnreadMentions) != 2 || a.Conversation.UnreadMentions[1].Seq != c3 {
			t.Errorf("limit 2: %+v", a.Conversation.UnreadMentions)
		}
		r, err := erin.c.RawPost(mentionCountQuery, client.Var("c", crew), client.Var("limit", 101))
		if err != nil {
			t.Fatal(err)
		}
		var errs []struct{ Extensions struct{ Code string } }
		_ = json.Unmarshal(r.Errors, &errs)
		if len(errs) == 0 || errs[0].Extensions.Code != "LIMIT_EXCEEDED" {
			t.Errorf("limit 101: errors %s, want LIMIT_EXCEEDED", r.Errors)
		}
	})

	t.Run("a read on another device lowers it", func(t *testing.T) {
		// Reads are per user, whichever device: a second client of alice's reads.
		alice2 := mentionClient(t, g, "alice", g.Token("alice"))
		token := alice.syncToken()
		alice2.read(crew, c2)
		alice.expect(crew, c4)
		// The first device learns the new count from the read's event.
		var d struct {
			SyncDifference struct {
				Token  string
				Events []struct {
					Type                                     string
					ConversationID                           *string
					ReadSeq, UnreadCount, UnreadMentionCount *int64
				}
			}
		}
		if err := alice.c.Post(mentionDiffQuery, &d, client.Var("since", token)); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range d.SyncDifference.Events {
			if ev.Type == "READ" && ev.ConversationID != nil && *ev.ConversationID == crew {
				found = true
				if ev.UnreadMentionCount == nil || *ev.UnreadMentionCount != 1 || *ev.ReadSeq != c2 {
					t.Errorf("READ event: readSeq %v, unreadMentionCount %v; want %d, 1", *ev.ReadSeq, ev.UnreadMentionCount, c2)
				}
			}
		}
		if !found {
			t.Errorf("no READ event for %s after %s", crew, token)
		}
	})
	t.Run("revoke", func(t *testing.T) {
		dave.revoke(crew, c4)
		alice.expect(crew)
		carol.expect(crew, c2, c3)
	})
	t.Run("delete for everyone", func(t *testing.T) {
		dave.remove(crew, true, c3)
		carol.expect(crew, c2)
		erin.expect(crew, c2, c5)
	})
	t.Run("deleted for me", func(t *testing.T) {
		erin.remove(crew, false, c2)
		erin.expect(crew, c5)
		carol.expect(crew, c2) // only erin's
	})
	t.Run("Redis emptied", func(t *testing.T) {
		if err := g.Redis.FlushAll(); err != nil {
			t.Fatal(err)
		}
		erin.expect(crew, c5)
		carol.expect(crew, c2)
		bob.expect(conv, s6)
		// And the copy Redis was filled with keeps following changes.
		c6 := dave.send("crew", "carol")
		carol.expect(crew, c2, c6)
	})
	t.Run("clear for me", func(t *testing.T) {
		carol.clear(crew, false)
		carol.expect(crew)
		erin.expect(crew, c5)
	})
	t.Run("clear for everyone", func(t *testing.T) {
		dave.clear(crew, true)
		erin.expect(crew)
	})
	t.Run("totals", func(t *testing.T) {
		for _, tc := range []struct {
			m    *mentions
			conv string
			want int64
		}{{bob, conv, 1}, {alice, crew, 0}, {carol, crew, 0}, {erin, crew, 0}} {
			if _, _, total := tc.m.state(tc.conv); total != tc.want {
				t.Errorf("%s's totalUnreadMentions %d, want %d", tc.m.user, total, tc.want)
			}
		}
	})
}

// TestUnreadMentionsRetention: mentions in seqs retention took are no longer counted.
func TestUnreadMentionsRetention(t *testing.T) {
	g := gatewaytest.Start(t)
	setTeam(t, g, "old", "alice", "bob")
	now := time.Now()
	var msgs []*im.Message
	for i := range 150 {
		at := now.Add(-40 * 24 * time.Hour).UnixMilli()
		if i >= 120 {
			at = now.UnixMilli()
		}
		msgs = append(msgs, &im.Message{SendID: "alice", GroupID: "old", ContentType: 101, Content: "x", SendTime: at, AtUserIDList: []string{"bob"}})
	}
	if _, err := g.Ingest.Ingest(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	bob := mentionClient(t, g, "bob", g.Token("bob"))
	if n, _, _ := bob.state("sg_old"); n != 150 {
		t.Fatalf("before retention: %d, want 150", n)
	}
	job := retention.New(g.Store, g.Cache, g.Ledger, retention.Options{MaxAge: 30 * 24 * time.Hour, Now: func() time.Time { return now }})
	if _, err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The min seq moved to the first recent message, 121: the mentions below it are gone.
	n, seqs, _ := bob.state("sg_old")
	if n != 30 || len(seqs) != 30 || seqs[0] != 121 {
		t.Errorf("after retention: count %d, first of %d listed %v; want 30 from 121", n, len(seqs), seqs[:min(3, len(seqs))])
	}
}

// recount counts the user's unread mentions from the stored messages as they read them:
// readable (OK), above their read seq, not their own, naming them or AtAllTag.
func (m *mentions) recount(conv string) int64 {
	m.t.Helper()
	var c struct {
		Conversation struct{ MaxSeq, MinSeq, ReadSeq int64 }
	}
	if err := m.c.Post(`query($c: ID!) { conversation(id: $c) { maxSeq minSeq readSeq } }`, &c, client.Var("c", conv)); err != nil {
		m.t.Fatal(err)
	}
	from := max(c.Conversation.ReadSeq+1, c.Conversation.MinSeq)
	var seqs []int64
	for s := from; s <= c.Conversation.MaxSeq; s++ {
		seqs = append(seqs, s)
	}
	if len(seqs) == 0 {
		return 0
	}
	var out struct {
		Messages []struct {
			Status    string
			SendID    *string
			AtUserIDs []string
		}
	}
	if err := m.c.Post(`query($c: ID!, $s: [Int64!]!) { messages(conversationID: $c, seqs: $s) { status sendID atUserIDs } }`, &out,
		client.Var("c", conv), client.Var("s", seqs)); err != nil {
		m.t.Fatal(err)
	}
	var n int64
	for _, msg := range out.Messages {
		if msg.Status == "OK" && msg.SendID != nil && *msg.SendID != m.user &&
			(slices.Contains(msg.AtUserIDs, m.user) || slices.Contains(msg.AtUserIDs, im.AtAllTag)) {
			n++
		}
	}
	return n
}

// TestUnreadMentionsProperty: random sends with random mentions, reads on two devices,
// revokes, deletes and clears always leave each member's unreadMentionCount equal to the count
// recomputed from the stored messages, also after Redis is emptied.
func TestUnreadMentionsProperty(t *testing.T) {
	g := gatewaytest.Start(t)
	users := []string{"u0", "u1", "u2"}
	setTeam(t, g, "prop", users...)
	const conv = "sg_prop"
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	devices := map[string][2]*mentions{}
	for _, u := range users {
		a, b := mentionClient(t, g, u, g.Token(u)), mentionClient(t, g, u, g.Token(u))
		a.lenient, b.lenient = true, true
		devices[u] = [2]*mentions{a, b}
	}
	var maxSeq int64
	check := func(when string) {
		t.Helper()
		for _, u := range users {
			d := devices[u][0]
			got, _, _ := d.state(conv)
			if want := d.recount(conv); got != want {
				t.Fatalf("%s: %s's unreadMentionCount %d, recomputed from the messages %d", when, u, got, want)
			}
		}
	}
	for step := range 60 {
		u := users[rng.IntN(len(users))]
		d := devices[u][rng.IntN(2)]
		switch op := rng.IntN(10); {
		case op < 5 || maxSeq == 0:
			var at []string
			for _, c := range append(slices.Clone(users), im.AtAllTag) {
				if rng.IntN(3) == 0 {
					at = append(at, c)
				}
			}
			maxSeq = d.send("prop", at...)
		case op < 7:
			d.read(conv, 1+rng.Int64N(maxSeq))
		case op == 7:
			devices["u0"][rng.IntN(2)].revoke(conv, 1+rng.Int64N(maxSeq)) // u0 owns the group
		case op == 8:
			devices["u0"][0].remove(conv, rng.IntN(2) == 0, 1+rng.Int64N(maxSeq))
			d.remove(conv, false, 1+rng.Int64N(maxSeq))
		default:
			if rng.IntN(4) == 0 {
				devices["u0"][0].clear(conv, true)
			} else {
				d.clear(conv, false)
			}
		}
		if step%5 == 4 {
			check(fmt.Sprintf("step %d", step))
		}
	}
	check("the end")
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	check("after FLUSHALL")
}

// TestOpenIMUnreadMentions: the same rules in OpenIM mode, from OpenIM's chunks
// (at_user_id_list, revoke, del_list) and seqs, without writing to OpenIM's stores.
func TestOpenIMUnreadMentions(t *testing.T) {
	g := gatewaytest.StartOpenIM(t, nil)
	for i, u := range []string{"alice", "bob", "carol", "erin"} {
		role := int32(20)
		if i == 0 {
			role = 100
		}
		g.IM.AddGroupMember("team", u, role)
	}
	g.IM.CreateGroupChatConversations("team", "alice", "bob", "carol", "erin")
	conv := openimtest.GroupConversationID("team")
	msg := func(from string, at ...string) *openimtest.MsgData {
		m := openimtest.Group(from, "team", openimtest.ContentText, openimtest.TextContent("hi"))
		m.AtUserIDList = at
		return m
	}
	seqs := g.IM.Send(conv,
		msg("alice", "bob"),                // 1: bob
		msg("alice", im.AtAllTag),          // 2: bob, carol, erin
		msg("alice"),                       // 3: nobody
		msg("alice", im.AtAllTag, "carol"), // 4: bob, carol, erin
		msg("alice", "carol", "erin"),      // 5: carol, erin
		msg("alice", "erin"),               // 6: erin
		msg("alice", "alice", im.AtAllTag)) // 7: bob, carol, erin; never alice
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("seqs %v", seqs)
	}
	users := map[string]*mentions{}
	for _, u := range []string{"alice", "bob", "carol", "erin"} {
		users[u] = mentionClient(t, g.Gateway, u, g.IM.Login(u, 1, 7))
	}
	users["alice"].expect(conv)
	users["bob"].expect(conv, 1, 2, 4, 7)
	users["carol"].expect(conv, 2, 4, 5, 7)
	users["erin"].expect(conv, 2, 4, 5, 6, 7)

	// A read on any device: OpenIM keeps one read seq per user.
	g.IM.SetReadSeq(conv, "bob", 2)
	users["bob"].expect(conv, 4, 7)
	g.IM.Revoke(conv, 4, openimtest.Revoke{UserID: "alice", Role: 100, Nickname: "Alice"})
	users["bob"].expect(conv, 7)
	users["carol"].expect(conv, 2, 5, 7)
	g.IM.DeleteForEveryone(conv, 5)
	users["carol"].expect(conv, 2, 7)
	g.IM.DeleteForMe(conv, "erin", 2, 6)
	users["erin"].expect(conv, 7)
	users["carol"].expect(conv, 2, 7)
	// Cleared for carol (her min seq), and retention for all (the conversation's).
	g.IM.SetUserMinSeq(conv, "carol", 3)
	users["carol"].expect(conv, 7)
	if err := g.Redis.FlushAll(); err != nil { // msggate's own Redis: nothing of the answer is kept there
		t.Fatal(err)
	}
	users["erin"].expect(conv, 7)
	g.IM.SetMinSeq(conv, 8)
	users["erin"].expect(conv)
	users["bob"].expect(conv)

	// The reads write nothing to OpenIM's stores.
	after := g.IM.Snapshot()
	for _, u := range users {
		u.expect(conv)
	}
	if d := openimtest.Diff(after, g.IM.Snapshot()); len(d) != 0 {
		t.Errorf("the reads changed OpenIM's stores: %v", d)
	}
}

// TestAtAllCostsOneEntry: an AtAllTag message in a group of 5,000 writes one entry of the
// mention index, not one per member, and a member's count reads it back.
func TestAtAllCostsOneEntry(t *testing.T) {
	g := gatewaytest.Start(t)
	groupOf(t, g, "big", 5000)
	owner, member := mentionClient(t, g, "m-0001", g.Token("m-0001")), mentionClient(t, g, "m-4999", g.Token("m-4999"))
	g.Mongo.Reset()
	seq := owner.send("big", im.AtAllTag)
	if n := g.Mongo.Writes("msg_mention"); n != 1 {
		t.Errorf("an AtAllTag message in a group of 5,000 wrote the mention index %d times, want 1", n)
	}
	if err := g.Redis.FlushAll(); err != nil { // so that the count reads the store
		t.Fatal(err)
	}
	g.Mongo.Reset()
	member.expect("sg_big", seq)
	owner.expect("sg_big")
	if n := g.Mongo.Count("msg_mention", "find"); n > 5 {
		t.Errorf("counting read the mention index %d times, want a few", n)
	}
}

// TestUnreadMentionsLive: a device subscribed to syncEvents learns the new count from the READ
// event another device's read causes.
func TestUnreadMentionsLive(t *testing.T) {
	g := gatewaytest.Start(t)
	setTeam(t, g, "team", "alice", "bob")
	alice, bob := mentionClient(t, g, "alice", g.Token("alice")), mentionClient(t, g, "bob", g.Token("bob"))
	alice.send("team", "bob")
	s2 := alice.send("team", im.AtAllTag)
	alice.send("team", "bob")
	bob.expect("sg_team", 1, 2, 3)

	ws := gatewaytest.ConnectWS(t, g.URL, g.Token("bob"), gatewaytest.WSOptions{})
	token := bob.syncToken()
	ws.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($since: String) { syncEvents(since: $since) { type conversationID readSeq unreadMentionCount } }`,
		"variables": map[string]any{"since": token}}})
	bob.read("sg_team", s2) // on another device
	for {
		m := ws.Next()
		b, _ := json.Marshal(m["payload"])
		var p struct {
			Data struct {
				SyncEvents struct {
					Type               string
					ReadSeq            *int64
					UnreadMentionCount *int64
				}
			}
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if ev := p.Data.SyncEvents; ev.Type == "READ" {
			if ev.UnreadMentionCount == nil || *ev.UnreadMentionCount != 1 {
				t.Errorf("live READ event: %s, want unreadMentionCount 1", b)
			}
			return
		}
	}
}

// TestMentionOfADeadWriter: a send whose writer died right after its chunk write has its
// mention recorded by the relay that finishes it, from the slot it wrote.
func TestMentionOfADeadWriter(t *testing.T) {
	g := startWithRelay(t)
	setTeam(t, g, "team", "alice", "bob")
	w := dyingWriter(g, "store", nil)
	_, err := w.Ingest(context.Background(), []*im.Message{{SendID: "alice", GroupID: "team", ContentType: 101, Content: "@bob", AtUserIDList: []string{"bob"}}})
	if err == nil {
		t.Fatal("the dying writer finished")
	}
	bob := mentionClient(t, g, "bob", g.Token("bob"))
	gatewaytest.WaitFor(t, 10*time.Second, "the relay to finish the send", func() bool {
		n, _, _ := bob.state("sg_team")
		return n == 1
	})
	if err := g.Redis.FlushAll(); err != nil {
		t.Fatal(err)
	}
	bob.expect("sg_team", 1)
}

// TestOpenIMUnreadMentionsProperty: in OpenIM mode too, random sends with random mentions, read
// seqs moved, revokes, deletes and clears as OpenIM makes them leave each member's
// unreadMentionCount equal to the count recomputed from the messages.
func TestOpenIMUnreadMentionsProperty(t *testing.T) {
	g := gatewaytest.StartOpenIM(t, nil)
	users := []string{"u0", "u1", "u2"}
	for i, u := range users {
		role := int32(20)
		if i == 0 {
			role = 100
		}
		g.IM.AddGroupMember("prop", u, role)
	}
	g.IM.CreateGroupChatConversations("prop", users...)
	conv := openimtest.GroupConversationID("prop")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	clients := map[string]*mentions{}
	for _, u := range users {
		clients[u] = mentionClient(t, g.Gateway, u, g.IM.Login(u, 1, 7))
	}
	var maxSeq int64
	for step := range 40 {
		u := users[rng.IntN(len(users))]
		switch op := rng.IntN(10); {
		case op < 5 || maxSeq == 0:
			m := openimtest.Group(u, "prop", openimtest.ContentText, openimtest.TextContent("x"))
			for _, c := range append(slices.Clone(users), im.AtAllTag) {
				if rng.IntN(3) == 0 {
					m.AtUserIDList = append(m.AtUserIDList, c)
				}
			}
			maxSeq = g.IM.Send(conv, m)[0]
		case op < 7:
			g.IM.SetReadSeq(conv, u, 1+rng.Int64N(maxSeq))
		case op == 7:
			g.IM.Revoke(conv, 1+rng.Int64N(maxSeq), openimtest.Revoke{UserID: "u0", Role: 100})
		case op == 8:
			if rng.IntN(2) == 0 {
				g.IM.DeleteForEveryone(conv, 1+rng.Int64N(maxSeq))
			} else {
				g.IM.DeleteForMe(conv, u, 1+rng.Int64N(maxSeq))
			}
		default:
			g.IM.SetUserMinSeq(conv, u, 1+rng.Int64N(maxSeq))
		}
		if step%5 == 4 {
			for _, u := range users {
				got, _, _ := clients[u].state(conv)
				if want := clients[u].recount(conv); got != want {
					t.Fatalf("step %d: %s's unreadMentionCount %d, recomputed from the messages %d", step, u, got, want)
				}
			}
		}
	}
}
