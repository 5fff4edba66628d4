package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// These tests run GraphQL requests over HTTP and WebSocket, with OpenIM tokens, against a
// gateway in OpenIM mode (gatewaytest.StartOpenIM) over an OpenIM v3.8 deployment that
// openimtest writes as OpenIM writes, and check the numbers and messages an OpenIM client
// would see.

const conversationQuery = `query($id: ID!) { conversation(id: $id) { id kind maxSeq minSeq readSeq unreadCount
	lastMessage { seq status content }
	history(limit: 3) { messages { seq status content } hasMoreBefore hasMoreAfter } } }`

type message struct {
	Seq     int64   `json:"seq"`
	Status  string  `json:"status"`
	Content *string `json:"content"`
	Revoke  *struct {
		UserID string `json:"userID"`
	} `json:"revoke"`
}

type conversation struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	MaxSeq      int64    `json:"maxSeq"`
	MinSeq      int64    `json:"minSeq"`
	ReadSeq     int64    `json:"readSeq"`
	UnreadCount int64    `json:"unreadCount"`
	LastMessage *message `json:"lastMessage"`
	History     struct {
		Messages      []message `json:"messages"`
		HasMoreBefore bool      `json:"hasMoreBefore"`
		HasMoreAfter  bool      `json:"hasMoreAfter"`
	} `json:"history"`
}

func conversationOf(g *gatewaytest.OpenIMGateway, token, id string) conversation {
	g.T.Helper()
	var out struct {
		Conversation conversation `json:"conversation"`
	}
	g.Query(token, conversationQuery, map[string]any{"id": id}, &out)
	return out.Conversation
}

func messagesOf(g *gatewaytest.OpenIMGateway, token, id string, seqs ...int64) []message {
	g.T.Helper()
	var out struct {
		Messages []message `json:"messages"`
	}
	g.Query(token, `query($id: ID!, $seqs: [Int64!]!) { messages(conversationID: $id, seqs: $seqs) { seq status content revoke { userID } } }`,
		map[string]any{"id": id, "seqs": seqs}, &out)
	return out.Messages
}

// texts returns n text messages from one user to another, "<prefix>1".."<prefix>n".
func texts(from, to, prefix string, n int) []*openimtest.MsgData {
	out := make([]*openimtest.MsgData, n)
	for i := range out {
		out[i] = openimtest.Single(from, to, openimtest.ContentText, openimtest.TextContent(fmt.Sprintf("%s%d", prefix, i+1)))
	}
	return out
}

func groupTexts(from, group, prefix string, n int) []*openimtest.MsgData {
	out := make([]*openimtest.MsgData, n)
	for i := range out {
		out[i] = openimtest.Group(from, group, openimtest.ContentText, openimtest.TextContent(fmt.Sprintf("%s%d", prefix, i+1)))
	}
	return out
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// post sends one GraphQL request with header as given (nil: none).
func post(g *gatewaytest.OpenIMGateway, header http.Header, query string, vars map[string]any) gatewaytest.Response {
	g.T.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	_, r := g.Do(req, "")
	return r
}

// errorCode sends a request that must fail and returns its first error's code.
func errorCode(g *gatewaytest.OpenIMGateway, header http.Header, query string, vars map[string]any) string {
	g.T.Helper()
	r := post(g, header, query, vars)
	if len(r.Errors) == 0 {
		g.T.Fatalf("expected an error, got data %s", r.Data)
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

func seqsOf(ms []message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func content(m *message) string {
	if m == nil || m.Content == nil {
		return ""
	}
	return *m.Content
}

// reservedMaxSeq is the conversation's seq.max_seq in OpenIM's MongoDB: the end of the last
// block of seqs OpenIM reserved, not its last message.
func reservedMaxSeq(g *gatewaytest.OpenIMGateway, conv string) int64 {
	g.T.Helper()
	var doc struct {
		MaxSeq int64 `bson:"max_seq"`
	}
	if err := g.IM.DB.Collection("seq").FindOne(context.Background(), bson.D{{Key: "conversation_id", Value: conv}}).Decode(&doc); err != nil {
		g.T.Fatal(err)
	}
	return doc.MaxSeq
}

// Ensure maxSeq, readSeq and unreadCount are OpenIM's, in a single chat and a group whose
// seq.max_seq lies above the last message (the reserved block), also once OpenIM's Redis has
// lost the current max seq; and the newest page and lastMessage end at the last message.
func TestOpenIMSeqNumbers(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 250)...)
	g.IM.SetReadSeq(chat, "bob", 200) // mark-read: Redis only

	group := openimtest.GroupConversationID("g1")
	for _, u := range []string{"alice", "bob", "carol"} {
		g.IM.AddGroupMember("g1", u, openimtest.RoleMember)
	}
	g.IM.Send(group, groupTexts("alice", "g1", "a", 100)...)
	g.IM.Send(group, groupTexts("bob", "g1", "b", 30)...)
	g.IM.PersistReadSeq(group, "carol", 23) // a read seq only MongoDB still has
	if r1, r2 := reservedMaxSeq(g, chat), reservedMaxSeq(g, group); r1 != 300 || r2 != 200 {
		t.Fatalf("fixture: seq.max_seq %d and %d, want the reserved 300 and 200", r1, r2)
	}
	bob, carol, alice := g.IM.Login("bob", 1, 7), g.IM.Login("carol", 5, 7), g.IM.Login("alice", 2, 7)

	check := func(when string) {
		t.Helper()
		c := conversationOf(g, bob, chat)
		if c.Kind != "SINGLE" || c.MaxSeq != 250 || c.ReadSeq != 200 || c.UnreadCount != 50 || c.MinSeq != 1 {
			t.Errorf("%s: bob's chat %+v, want maxSeq 250, readSeq 200, unread 50, minSeq 1", when, c)
		}
		if c.LastMessage == nil || c.LastMessage.Seq != 250 || c.LastMessage.Status != "OK" || !strings.Contains(content(c.LastMessage), "m250") {
			t.Errorf("%s: lastMessage %+v, want seq 250 OK m250", when, c.LastMessage)
		}
		if got := seqsOf(c.History.Messages); !slices.Equal(got, []int64{248, 249, 250}) || !c.History.HasMoreBefore || c.History.HasMoreAfter {
			t.Errorf("%s: newest page %v (before %v, after %v), want 248..250", when, got, c.History.HasMoreBefore, c.History.HasMoreAfter)
		}
		for _, m := range c.History.Messages {
			if m.Status != "OK" || !strings.Contains(content(&m), fmt.Sprintf("m%d", m.Seq)) {
				t.Errorf("%s: newest page message %+v", when, m)
			}
		}
		if a := conversationOf(g, alice, chat); a.ReadSeq != 250 || a.UnreadCount != 0 {
			t.Errorf("%s: the sender's own messages are unread: %+v", when, a)
		}
		gc := conversationOf(g, carol, group)
		if gc.Kind != "GROUP" || gc.MaxSeq != 130 || gc.ReadSeq != 23 || gc.UnreadCount != 107 {
			t.Errorf("%s: carol's group %+v, want maxSeq 130, readSeq 23, unread 107", when, gc)
		}
		if gc.LastMessage == nil || gc.LastMessage.Seq != 130 || !strings.Contains(content(gc.LastMessage), "b30") {
			t.Errorf("%s: group lastMessage %+v, want seq 130 b30", when, gc.LastMessage)
		}
		if ab := conversationOf(g, alice, group); ab.ReadSeq != 100 || ab.UnreadCount != 30 {
			t.Errorf("%s: alice in the group %+v, want readSeq 100, unread 30", when, ab)
		}
	}
	check("with MALLOC_SEQ")
	g.IM.LoseSeqCache(chat)
	g.IM.LoseSeqCache(group)
	check("after OpenIM's Redis lost MALLOC_SEQ")
}

// quoteOf is the content of an OpenIM quote of quoted at seq, as OpenIM's SDK writes it.
func quoteOf(t *testing.T, quoted *openimtest.MsgData, seq int64) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"text": "replying", "quoteMessage": map[string]any{
		"clientMsgID": quoted.ClientMsgID, "sendID": quoted.SendID, "recvID": quoted.RecvID,
		"sessionType": quoted.SessionType, "contentType": quoted.ContentType, "seq": seq,
		"content": quoted.Content, "textElem": map[string]string{"content": "quoted text"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Ensure revoked, deleted-for-me (for that user only) and physically deleted messages show as
// OpenIM shows them, a quote of a revoked message withholds the quoted text, and seqs above
// the max seq are left out.
func TestOpenIMMessageStatuses(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	msgs := texts("alice", "bob", "m", 4)
	g.IM.Send(chat, msgs...)
	g.IM.Send(chat,
		openimtest.Single("bob", "alice", openimtest.ContentQuote, quoteOf(t, msgs[1], 2)),
		openimtest.Single("bob", "alice", openimtest.ContentQuote, quoteOf(t, msgs[0], 1)))
	g.IM.Revoke(chat, 2, openimtest.Revoke{Role: 0, UserID: "alice", Nickname: "Alice"})
	g.IM.DeleteForMe(chat, "bob", 3)
	g.IM.DeleteForEveryone(chat, 4)
	bob, alice := g.IM.Login("bob", 1, 7), g.IM.Login("alice", 1, 7)

	got := messagesOf(g, bob, chat, 1, 2, 3, 4, 5, 6, 7)
	if seqs := seqsOf(got); !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("seqs %v, want 1..6 (7 is above the max seq)", seqs)
	}
	want := []string{"OK", "REVOKED", "DELETED", "DELETED", "OK", "OK"}
	for i, m := range got {
		if m.Status != want[i] {
			t.Errorf("seq %d: %s, want %s", m.Seq, m.Status, want[i])
		}
	}
	if got[1].Revoke == nil || got[1].Revoke.UserID != "alice" || got[1].Content != nil {
		t.Errorf("revoked message: %+v", got[1])
	}
	if c := content(&got[4]); strings.Contains(c, "m2") || strings.Contains(c, "quoted text") || !strings.Contains(c, "2101") {
		t.Errorf("a quote of the revoked message still shows it: %s", c)
	}
	if c := content(&got[5]); !strings.Contains(c, "m1") {
		t.Errorf("a quote of a standing message lost it: %s", c)
	}
	if st := messagesOf(g, alice, chat, 3, 4); st[0].Status != "OK" || st[1].Status != "DELETED" {
		t.Errorf("alice sees seq 3 %s (bob deleted it for himself only) and 4 %s", st[0].Status, st[1].Status)
	}
}

// Ensure OpenIM mode keeps no chunks in memory: OpenIM changes its store without moving
// msggate's chunks version, so a change it makes between two reads shows in the second.
func TestOpenIMChangesShowAtOnce(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	if g.ChunkMemory != nil {
		t.Fatal("OpenIM mode keeps decoded chunks in memory")
	}
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 2)...)
	bob := g.IM.Login("bob", 1, 7)
	for range 2 {
		if st := messagesOf(g, bob, chat, 1); st[0].Status != "OK" {
			t.Fatalf("seq 1 before the revoke: %s", st[0].Status)
		}
	}
	g.IM.Revoke(chat, 1, openimtest.Revoke{Role: 0, UserID: "alice", Nickname: "Alice"})
	if st := messagesOf(g, bob, chat, 1); st[0].Status != "REVOKED" {
		t.Errorf("seq 1 right after OpenIM revoked it: %s, want REVOKED", st[0].Status)
	}
}

// Ensure messages OpenIM has accepted but not yet written to MongoDB are served from its
// Redis message cache, and count in maxSeq and lastMessage.
func TestOpenIMInFlightMessages(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 2)...)
	inFlight := texts("alice", "bob", "late", 2)
	g.IM.SendInFlight(chat, inFlight...)
	bob := g.IM.Login("bob", 1, 7)

	c := conversationOf(g, bob, chat)
	if c.MaxSeq != 4 || c.UnreadCount != 4 || c.LastMessage == nil || c.LastMessage.Seq != 4 || !strings.Contains(content(c.LastMessage), "late2") {
		t.Errorf("with two messages in flight: %+v, lastMessage %+v", c, c.LastMessage)
	}
	for _, m := range messagesOf(g, bob, chat, 3, 4) {
		if m.Status != "OK" || !strings.Contains(content(&m), fmt.Sprintf("late%d", m.Seq-2)) {
			t.Errorf("in-flight message %+v", m)
		}
	}
	g.IM.ToMongo(chat, inFlight...)
	if m := messagesOf(g, bob, chat, 4); m[0].Status != "OK" || !strings.Contains(content(&m[0]), "late2") {
		t.Errorf("after OpenIM wrote it to MongoDB: %+v", m[0])
	}
}

// Ensure who may read what comes from OpenIM's records (conversation documents, the
// notification conversations derived from them, group_member), never from the user IDs
// inside a conversation ID, and that refusals carry msggate's usual codes.
func TestOpenIMAccess(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 2)...)
	underscored := openimtest.SingleConversationID("u_1", "u_2")
	g.IM.Send(underscored, texts("u_1", "u_2", "x", 1)...)
	group := openimtest.GroupConversationID("g1")
	g.IM.AddGroupMember("g1", "alice", openimtest.RoleOwner)
	g.IM.AddGroupMember("g1", "carol", openimtest.RoleMember)
	g.IM.Send(group, groupTexts("alice", "g1", "a", 3)...)
	g.IM.AddGroupMember("g1", "dave", openimtest.RoleMember) // joined after: no conversation document
	g.IM.QuitGroup("g1", "carol")                            // may read up to seq 3
	g.IM.Send(group, groupTexts("alice", "g1", "b", 2)...)

	alice, eve, dave, carol, u2 := g.IM.Login("alice", 1, 7), g.IM.Login("eve", 1, 7), g.IM.Login("dave", 1, 7), g.IM.Login("carol", 1, 7), g.IM.Login("u_2", 1, 7)
	groupNamed := g.IM.Login("g1", 1, 7) // a user whose ID is the group's

	for _, tc := range []struct {
		name, token, id, want string
	}{
		{"a stranger in a single chat", eve, chat, "FORBIDDEN"},
		{"a stranger in a group", eve, group, "FORBIDDEN"},
		{"a conversation that does not exist", alice, "si_alice_nobody", "FORBIDDEN"},
		{"a user named like a group, in its notifications", groupNamed, "n_g1", "FORBIDDEN"},
		{"a malformed ID", alice, "x_alice_bob", "BAD_USER_INPUT"},
		{"a bare prefix", alice, "si_", "BAD_USER_INPUT"},
	} {
		if code := errorCode(g, bearer(tc.token), conversationQuery, map[string]any{"id": tc.id}); code != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code, tc.want)
		}
	}
	if code := errorCode(g, bearer(eve), `{ messages(conversationID: "si_alice_bob", seqs: [1]) { seq } }`, nil); code != "FORBIDDEN" {
		t.Errorf("messages of a chat eve is not in: %s", code)
	}
	if code := errorCode(g, bearer(alice), `{ messages(conversationID: "nope", seqs: [1]) { seq } }`, nil); code != "BAD_USER_INPUT" {
		t.Errorf("messages of a malformed ID: %s", code)
	}

	if c := conversationOf(g, u2, underscored); c.MaxSeq != 1 || c.Kind != "SINGLE" {
		t.Errorf("a chat of users whose IDs hold '_': %+v", c)
	}
	if c := conversationOf(g, alice, "n_alice_bob"); c.Kind != "NOTIFICATION" || c.MaxSeq != 0 {
		t.Errorf("alice's notifications of her chat with bob: %+v", c)
	}
	if c := conversationOf(g, dave, group); c.MaxSeq != 5 {
		t.Errorf("a member without a conversation document: %+v", c)
	}
	if c := conversationOf(g, carol, group); c.MaxSeq != 3 {
		t.Errorf("a member who quit at seq 3 reads up to %d", c.MaxSeq)
	}
}

// Ensure the viewer's conversation list and totalUnread come from OpenIM's conversation
// documents, newest activity first, paged, and syncState agrees with them.
func TestOpenIMConversationList(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	withAlice := openimtest.SingleConversationID("alice", "bob")
	withCarol := openimtest.SingleConversationID("bob", "carol")
	group := openimtest.GroupConversationID("g1")
	g.IM.AddGroupMember("g1", "bob", openimtest.RoleMember)
	g.IM.AddGroupMember("g1", "dave", openimtest.RoleOwner)
	g.IM.Send(withAlice, texts("alice", "bob", "m", 3)...) // 3 unread
	g.IM.Send(group, groupTexts("dave", "g1", "g", 5)...)  // 5 unread
	g.IM.Send(withCarol, texts("carol", "bob", "c", 2)...) // 2 unread, newest
	g.IM.SetReadSeq(group, "bob", 1)                       // 4 unread now
	bob := g.IM.Login("bob", 1, 7)

	const listQuery = `query($after: String) { viewer { userID totalUnread
		conversations(first: 2, after: $after) { nodes { id unreadCount } pageInfo { endCursor hasNextPage } } } }`
	type page struct {
		Viewer struct {
			UserID        string `json:"userID"`
			TotalUnread   int64  `json:"totalUnread"`
			Conversations struct {
				Nodes []struct {
					ID          string `json:"id"`
					UnreadCount int64  `json:"unreadCount"`
				} `json:"nodes"`
				PageInfo struct {
					EndCursor   *string `json:"endCursor"`
					HasNextPage bool    `json:"hasNextPage"`
				} `json:"pageInfo"`
			} `json:"conversations"`
		} `json:"viewer"`
	}
	var ids []string
	var unread []int64
	var p page
	var after *string
	for i := 0; i < 2; i++ {
		g.Query(bob, listQuery, map[string]any{"after": after}, &p)
		for _, n := range p.Viewer.Conversations.Nodes {
			ids, unread = append(ids, n.ID), append(unread, n.UnreadCount)
		}
		if p.Viewer.UserID != "bob" || p.Viewer.TotalUnread != 9 {
			t.Errorf("viewer %s, totalUnread %d, want bob and 9", p.Viewer.UserID, p.Viewer.TotalUnread)
		}
		after = p.Viewer.Conversations.PageInfo.EndCursor
		if more := p.Viewer.Conversations.PageInfo.HasNextPage; more != (i == 0) {
			t.Errorf("page %d: hasNextPage %v", i+1, more)
		}
	}
	if !slices.Equal(ids, []string{withCarol, group, withAlice}) || !slices.Equal(unread, []int64{2, 4, 3}) {
		t.Errorf("list %v with unread %v, want [%s %s %s] with [2 4 3]", ids, unread, withCarol, group, withAlice)
	}

	var st struct {
		SyncState struct {
			Token         string `json:"token"`
			TotalUnread   int64  `json:"totalUnread"`
			HasMore       bool   `json:"hasMore"`
			Conversations []struct {
				ID          string `json:"id"`
				UnreadCount int64  `json:"unreadCount"`
			} `json:"conversations"`
		} `json:"syncState"`
	}
	g.Query(bob, `{ syncState { token totalUnread hasMore conversations { id unreadCount } } }`, nil, &st)
	if st.SyncState.TotalUnread != 9 || st.SyncState.HasMore || len(st.SyncState.Conversations) != 3 ||
		st.SyncState.Conversations[0].ID != withCarol || st.SyncState.Token != "" {
		t.Errorf("syncState %+v, want the same three conversations, 9 unread, no token", st.SyncState)
	}
	if code := errorCode(g, bearer(bob), `{ syncDifference(since: "x.1") { token } }`, nil); code != "UNSUPPORTED" {
		t.Errorf("syncDifference: %s, want UNSUPPORTED", code)
	}
}

// Ensure OpenIM's access tokens are accepted from the Authorization header and OpenIM's own
// token header, and refused as UNAUTHENTICATED when forged, expired, kicked, never recorded by
// OpenIM, or msggate's own.
func TestOpenIMTokensOverHTTP(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	const viewerQuery = `{ viewer { userID } }`
	good := g.IM.Login("bob", 2, 7)
	for name, h := range map[string]http.Header{"Authorization": bearer(good), "token header": {"Token": {good}}} {
		var out struct {
			Viewer struct {
				UserID string `json:"userID"`
			} `json:"viewer"`
		}
		r := post(g, h, viewerQuery, nil)
		if len(r.Errors) > 0 || json.Unmarshal(r.Data, &out) != nil || out.Viewer.UserID != "bob" {
			t.Errorf("%s: %s %+v", name, r.Data, r.Errors)
		}
	}

	kicked := g.IM.Login("bob", 1, 7)
	g.IM.SetTokenStatus("bob", 1, kicked, openimtest.TokenKicked)
	expired := openimtest.SignToken(g.IM.Secret, openimtest.BuildClaims("bob", 3, -time.Hour))
	g.IM.SetTokenStatus("bob", 3, expired, openimtest.TokenNormal)
	forged := openimtest.SignToken("not-the-secret", openimtest.BuildClaims("bob", 4, time.Hour))
	g.IM.SetTokenStatus("bob", 4, forged, openimtest.TokenNormal)
	unrecorded := openimtest.SignToken(g.IM.Secret, openimtest.BuildClaims("bob", 5, time.Hour))
	own, err := auth.Issue([]byte(g.IM.Secret), "bob", false, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"kicked": kicked, "expired": expired, "forged": forged, "not recorded": unrecorded, "msggate's own": own, "garbage": "x.y.z"} {
		for how, h := range map[string]http.Header{"Authorization": bearer(tok), "token header": {"Token": {tok}}} {
			if code := errorCode(g, h, viewerQuery, nil); code != "UNAUTHENTICATED" {
				t.Errorf("%s token in the %s: %s, want UNAUTHENTICATED", name, how, code)
			}
		}
	}
	if code := errorCode(g, nil, viewerQuery, nil); code != "UNAUTHENTICATED" {
		t.Errorf("no token: %s", code)
	}
}

// Ensure connection_init takes an OpenIM token, refuses a kicked one with close code 4403, and
// that queries run over the connection while subscriptions to the event log OpenIM does not
// keep answer UNSUPPORTED.
func TestOpenIMTokensOverWebSocket(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	g.IM.Send(openimtest.SingleConversationID("alice", "bob"), texts("alice", "bob", "m", 2)...)
	kicked := g.IM.Login("bob", 1, 7)
	g.IM.SetTokenStatus("bob", 1, kicked, openimtest.TokenKicked)
	refused := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{})
	refused.Write(map[string]any{"type": "connection_init", "payload": map[string]any{"token": kicked}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, err = refused.Read(ctx)
	}
	if websocket.CloseStatus(err) != 4403 {
		t.Fatalf("a kicked token: closed with %v, want 4403", err)
	}

	c := gatewaytest.ConnectWS(t, g.URL, g.IM.Login("bob", 2, 7), gatewaytest.WSOptions{})
	c.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `{ conversation(id: "si_alice_bob") { maxSeq unreadCount } }`}})
	if m := c.Next(); m["type"] != "next" || fmt.Sprint(m["payload"]) != "map[data:map[conversation:map[maxSeq:2 unreadCount:2]]]" {
		t.Fatalf("a query over WebSocket: %v", m)
	}
	c.Write(map[string]any{"id": "2", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { syncEvents { type } }`}})
	m := c.Next()
	for m["id"] != "2" {
		m = c.Next()
	}
	// gqlgen answers a subscription refused by its resolver with a result carrying the error.
	if !strings.Contains(fmt.Sprint(m["payload"]), "code:UNSUPPORTED") {
		t.Fatalf("syncEvents: %v, want an UNSUPPORTED error", m)
	}
}

// Ensure every mutation answers READ_ONLY and that neither they nor any read change a thing
// in OpenIM's MongoDB or Redis (no document, index, key, or TTL), nor send MongoDB a write.
func TestOpenIMReadOnly(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 3)...)
	g.IM.AddGroupMember("g1", "bob", openimtest.RoleOwner)
	g.IM.Send(openimtest.GroupConversationID("g1"), groupTexts("bob", "g1", "g", 2)...)
	bob := g.IM.Login("bob", 1, 7)
	before := g.IM.Snapshot()
	g.Mongo.Reset()

	for _, m := range []string{
		`mutation { sendMessage(input: {recvID: "alice", contentType: 101, content: "hi"}) { seq } }`,
		`mutation { markConversationRead(conversationID: "si_alice_bob") { readSeq } }`,
		`mutation { revokeMessage(conversationID: "si_alice_bob", seq: 1) { seq } }`,
		`mutation { deleteMessages(conversationID: "si_alice_bob", seqs: [1], forEveryone: true) { seq } }`,
		`mutation { clearConversation(conversationID: "si_alice_bob") { minSeq } }`,
		`mutation { upsertGroup(groupID: "g1", members: [{userID: "bob"}]) { id } }`,
	} {
		if code := errorCode(g, bearer(bob), m, nil); code != "READ_ONLY" {
			t.Errorf("%s: %s, want READ_ONLY", m, code)
		}
	}
	var out any
	g.Query(bob, `{ viewer { totalUnread conversations { nodes { id maxSeq readSeq unreadCount lastMessage { seq } } } }
		syncState { totalUnread } messages(conversationID: "si_alice_bob", seqs: [1, 2, 3]) { status } }`, nil, &out)
	conversationOf(g, bob, "sg_g1")

	if diff := openimtest.Diff(before, g.IM.Snapshot()); len(diff) > 0 {
		t.Errorf("the deployment changed:\n%s", strings.Join(diff, "\n"))
	}
	for _, coll := range []string{"msg", "seq", "seq_user", "conversation", "group_member"} {
		if n := g.Mongo.Writes(coll); n > 0 {
			t.Errorf("%d writes to %s", n, coll)
		}
	}
}

// Ensure what OpenIM writes while msggate serves is visible on the very next request: a new
// message, a revoke, a delete for everyone and a delete for one user.
func TestOpenIMFreshness(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	chat := openimtest.SingleConversationID("alice", "bob")
	g.IM.Send(chat, texts("alice", "bob", "m", 3)...)
	bob := g.IM.Login("bob", 1, 7)
	if c := conversationOf(g, bob, chat); c.MaxSeq != 3 || c.LastMessage.Seq != 3 {
		t.Fatalf("before: %+v", c)
	}

	g.IM.Send(chat, texts("alice", "bob", "new", 1)...)
	if c := conversationOf(g, bob, chat); c.MaxSeq != 4 || c.UnreadCount != 4 || !strings.Contains(content(c.LastMessage), "new1") {
		t.Errorf("after OpenIM appended seq 4: %+v, lastMessage %+v", c, c.LastMessage)
	}
	g.IM.Revoke(chat, 4, openimtest.Revoke{UserID: "alice"})
	if c := conversationOf(g, bob, chat); c.LastMessage.Status != "REVOKED" || c.LastMessage.Content != nil {
		t.Errorf("after OpenIM revoked seq 4: lastMessage %+v", c.LastMessage)
	}
	g.IM.DeleteForEveryone(chat, 3)
	g.IM.DeleteForMe(chat, "bob", 2)
	if st := messagesOf(g, bob, chat, 1, 2, 3); st[0].Status != "OK" || st[1].Status != "DELETED" || st[2].Status != "DELETED" {
		t.Errorf("after OpenIM deleted seq 3 for everyone and seq 2 for bob: %+v", st)
	}
}

// Ensure a live WebSocket connection whose OpenIM token is then kicked, or no longer held,
// in OpenIM's Redis is closed within 5 s with 4403, whether the token came in connection_init or
// in the upgrade request's header, while another device's connection stays open.
func TestOpenIMWithdrawnTokenClosesConnection(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, nil)
	kicked := g.IM.Login("bob", 1, 7)
	byInit := gatewaytest.ConnectWS(t, g.URL, kicked, gatewaytest.WSOptions{})
	loggedOut := g.IM.Login("bob", 3, 7)
	byHeader := gatewaytest.DialWS(t, g.URL, gatewaytest.WSOptions{Header: http.Header{"Token": {loggedOut}}})
	byHeader.Init(map[string]any{})
	stays := gatewaytest.ConnectWS(t, g.URL, g.IM.Login("bob", 2, 7), gatewaytest.WSOptions{})

	withdrawn := time.Now()
	g.IM.SetTokenStatus("bob", 1, kicked, openimtest.TokenKicked)
	g.IM.DropTokens("bob", 3)
	for name, c := range map[string]*gatewaytest.WS{"kicked (connection_init)": byInit, "dropped (header)": byHeader} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		for err == nil {
			_, err = c.Read(ctx)
		}
		cancel()
		if websocket.CloseStatus(err) != 4403 {
			t.Errorf("%s: ended with %v, want close 4403", name, err)
		}
		if d := time.Since(withdrawn); d > 5*time.Second {
			t.Errorf("%s: closed %s after the token was withdrawn, want within 5 s", name, d)
		}
	}
	stays.Write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
	if m := stays.Next(); m["type"] != "next" {
		t.Fatalf("the connection whose token is still good: %v", m)
	}
}
