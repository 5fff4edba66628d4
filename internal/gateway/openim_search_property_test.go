package gateway_test

import (
	"context"
	"encoding/json"
	"flag"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openimsdk/protocol/sdkws"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
)

var (
	openIMSearchSeed = flag.Int64("search.openim-seed", 1, "seed of TestOpenIMSearchIndexMatchesOpenIM's random operations")
	openIMSearchOps  = flag.Int("search.openim-ops", 80, "how many random operations TestOpenIMSearchIndexMatchesOpenIM makes (a longer run: 1000)")
)

// The OpenIM property test's world: three single chats and a group dave is not in, which
// carol may leave.
var openIMPropMembers = map[string][]string{
	openimtest.SingleConversationID("alice", "bob"):   {"alice", "bob"},
	openimtest.SingleConversationID("alice", "carol"): {"alice", "carol"},
	openimtest.SingleConversationID("bob", "dave"):    {"bob", "dave"},
	openimtest.GroupConversationID("crew"):            {"alice", "bob", "carol"},
}

// Ensure that in OpenIM mode, after random sends (some of whose Kafka records are lost, so that
// only the gap fill finds them), revokes, deletes for everyone and for me, clears for oneself
// and for everyone, a member leaving the group, and a gateway closed in the middle of a burst
// (a second gateway on the same index and consumer group finishing its backlog), each user's
// search for each word finds exactly what a scan of OpenIM's stores shows them holding that
// word (their history in the conversations they are a member of now, as OpenIM's read rules
// show it), with the count to match. Everything is written as OpenIM writes it, with the
// records OpenIM would produce.
func TestOpenIMSearchIndexMatchesOpenIM(t *testing.T) {
	onEachOpenIMSearchEngine(t, testOpenIMSearchIndexMatchesOpenIM)
}

func testOpenIMSearchIndexMatchesOpenIM(t *testing.T, w *openIMWithFeed) {
	seed := *openIMSearchSeed
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	convs := slices.Sorted(func(yield func(string) bool) {
		for c := range openIMPropMembers {
			if !yield(c) {
				return
			}
		}
	})
	crew := openimtest.GroupConversationID("crew")
	for _, u := range openIMPropMembers[crew] {
		w.IM.AddGroupMember("crew", u, openimtest.RoleMember)
	}
	tokens := map[string]string{}
	for _, u := range propUsers {
		tokens[u] = w.IM.Login(u, 2, 7)
	}
	members := func(conv string) []string { return openIMPropMembers[conv] }
	left := map[string]bool{} // user/conv: a member who left
	current := func(conv string) []string {
		return slices.DeleteFunc(slices.Clone(members(conv)), func(u string) bool { return left[u+"/"+conv] })
	}

	other := func(conv, user string) string {
		for _, m := range members(conv) {
			if m != user {
				return m
			}
		}
		return user
	}
	text := func() string {
		words := make([]string, 1+rng.Intn(3))
		for i := range words {
			words[i] = propVocabulary[rng.Intn(len(propVocabulary))]
		}
		return strings.Join(words, " ")
	}
	// A message stamped with the real time, as OpenIM's server stamps it (openimtest's own
	// clock starts when the deployment does, before msggate began following it, and the
	// follower passes over what was sent before then).
	message := func(conv, sender string) *openimtest.MsgData {
		var m *openimtest.MsgData
		if conv == crew {
			m = openimtest.Group(sender, "crew", openimtest.ContentText, openimtest.TextContent(text()))
		} else {
			m = openimtest.Single(sender, other(conv, sender), openimtest.ContentText, openimtest.TextContent(text()))
		}
		m.SendTime = time.Now().UnixMilli()
		return m
	}
	// The stores are written from one goroutine at a time (the burst's sends hold mu), the
	// records from whichever.
	var mu sync.Mutex
	type sentMsg struct {
		conv string
		msg  *openimtest.MsgData
		seq  int64
	}
	var sent []sentMsg
	lost := 0
	send := func(conv string) {
		sender := current(conv)[rng.Intn(len(current(conv)))]
		m := message(conv, sender)
		loseIt := rng.Intn(5) == 0
		mu.Lock()
		seq := w.IM.Send(conv, m)[0]
		sent = append(sent, sentMsg{conv, m, seq})
		mu.Unlock()
		if loseIt {
			lost++ // only the gap fill finds it
			return
		}
		w.push.PushMessage(ctx, pushed(m, seq), headers)
	}
	gone := map[string]bool{} // conv/seq: revoked or deleted for everyone
	tips := int64(0)
	tip := func() int64 { tips++; return tips }
	pick := func() (sentMsg, bool) {
		if len(sent) == 0 {
			return sentMsg{}, false
		}
		return sent[rng.Intn(len(sent))], true
	}
	chatType := func(conv string) (recv string, typ int32) {
		if conv == crew {
			return "crew", openimtest.ReadGroupChatType
		}
		return "", openimtest.SingleChatType
	}

	operate := func() {
		switch op := rng.Intn(100); {
		case op < 55:
			send(convs[rng.Intn(len(convs))])
		case op < 65: // the sender revokes (OpenIM's RevokeMsg refuses a message revoked or deleted for everyone)
			if m, ok := pick(); ok && !gone[m.conv+"/"+itoa(m.seq)] {
				gone[m.conv+"/"+itoa(m.seq)] = true
				w.IM.Revoke(m.conv, m.seq, openimtest.Revoke{UserID: m.msg.SendID})
				w.push.PushNotification(ctx, openimfeedtest.Revoke(m.msg.SendID, pushed(m.msg, m.seq), m.conv, m.seq, tip()), headers)
			}
		case op < 77: // a member deletes for themselves
			if m, ok := pick(); ok {
				who := members(m.conv)[rng.Intn(len(members(m.conv)))]
				w.IM.DeleteForMe(m.conv, who, m.seq)
				w.push.PushNotification(ctx, openimfeedtest.DeleteForSelf(who, m.conv, []int64{m.seq}, tip()), headers)
			}
		case op < 83: // deleted for everyone
			if m, ok := pick(); ok {
				recv, typ := chatType(m.conv)
				if recv == "" {
					recv = other(m.conv, m.msg.SendID)
				}
				gone[m.conv+"/"+itoa(m.seq)] = true
				w.IM.DeleteForEveryone(m.conv, m.seq)
				w.push.PushNotification(ctx, openimfeedtest.DeleteForEveryone(m.msg.SendID, recv, typ, m.conv, []int64{m.seq}, tip()), headers)
			}
		case op < 88: // a member clears the conversation for themselves
			if m, ok := pick(); ok {
				who := members(m.conv)[rng.Intn(len(members(m.conv)))]
				w.IM.SetUserMinSeq(m.conv, who, m.seq+1)
				w.push.PushNotification(ctx, openimfeedtest.ClearForSelf(who, []string{m.conv}), headers)
			}
		case op < 91: // the conversation's history up to a message is cleared for everyone
			if m, ok := pick(); ok {
				recv, typ := chatType(m.conv)
				if recv == "" {
					recv = other(m.conv, m.msg.SendID)
				}
				w.IM.SetMinSeq(m.conv, m.seq)
				w.push.PushNotification(ctx, openimfeedtest.ClearForEveryone(m.msg.SendID, recv, typ, m.conv), headers)
			}
		default: // carol leaves the group (once)
			if !left["carol/"+crew] {
				w.IM.QuitGroup("crew", "carol")
				left["carol/"+crew] = true
				w.push.PushNotification(ctx, openimfeedtest.Notification{SendID: "carol", RecvID: "crew",
					ContentType: 1504, SessionType: openimtest.ReadGroupChatType, Tips: &sdkws.MemberQuitTips{}}, headers)
			} else {
				send(convs[rng.Intn(len(convs))])
			}
		}
	}

	// The feed's consumer group starts at the newest records once it has joined: wait for it.
	warm := openimtest.Single("alice", "bob", openimtest.ContentText, openimtest.TextContent("warm up"))
	ab := openimtest.SingleConversationID("alice", "bob")
	seq := w.IM.Send(ab, warm)[0]
	untilSearchable(t, w, tokens["bob"], "warm", warm, seq)

	operations := *openIMSearchOps
	for i := 0; i < operations/2; i++ {
		operate()
	}

	// A burst of sends, each stored and its record produced as OpenIM does, with the gateway
	// closed under it: what it read and did not index stays in the backlog, what it did not
	// read stays in Kafka past the group's committed offsets.
	g := w.Gateway
	burst := 12 + rng.Intn(12)
	convOf := make([]string, burst)
	for i := range convOf {
		convOf[i] = convs[rng.Intn(len(convs))]
	}
	senders := make([]string, burst)
	msgs := make([]*openimtest.MsgData, burst)
	for i, conv := range convOf {
		senders[i] = current(conv)[rng.Intn(len(current(conv)))]
		msgs[i] = message(conv, senders[i])
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, conv := range convOf {
			mu.Lock()
			seq := w.IM.Send(conv, msgs[i])[0]
			sent = append(sent, sentMsg{conv, msgs[i], seq})
			mu.Unlock()
			w.push.PushMessage(ctx, pushed(msgs[i], seq), headers)
		}
	}()
	time.Sleep(time.Duration(5+rng.Intn(30)) * time.Millisecond)
	if err := g.Gateway.Close(); err != nil {
		t.Logf("closing the first gateway: %v", err)
	}
	wg.Wait()
	// The second gateway opens the same index (the first's data directory holds its Bleve
	// index), Redis (the backlog) and consumer group.
	g = gatewaytest.New(t, g.Gateway.Config)
	for i := operations / 2; i < operations; i++ {
		operate()
	}

	var problems []string
	hits := 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		hits, problems = openIMSearchMismatches(t, g, tokens, convs, current)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range problems {
		t.Errorf("seed %d: %s", seed, p)
	}
	if hits == 0 {
		t.Errorf("seed %d: no search found anything: the run tested nothing", seed)
	}
	t.Logf("seed %d: %d messages sent (%d records lost, %d in the burst), %d revoke and delete records, carol left the group: %v; %d hits compared",
		seed, len(sent), lost, burst, tips, left["carol/"+crew], hits)
}

// openIMSearchMismatches compares, for each user and each of propQueries, the search's hits
// (all pages) and count with what the user's history shows as OK and holding the word, over
// the conversations they are a member of now (current).
func openIMSearchMismatches(t *testing.T, g *gatewaytest.Gateway, tokens map[string]string, convs []string,
	current func(string) []string) (hits int, problems []string) {
	t.Helper()
	for _, user := range propUsers {
		token := tokens[user]
		readable := map[string]string{}
		for _, conv := range convs {
			if slices.Contains(current(conv), user) {
				for k, v := range readableHistory(t, g, token, conv) {
					readable[k] = v
				}
			}
		}
		texts := make(map[string]string, len(readable))
		for k, content := range readable {
			texts[k] = openIMText(content)
		}
		n, found := searchesMatch(t, g, token, user, texts, "OpenIM's stores show")
		hits += n
		problems = append(problems, found...)
	}
	return hits, problems
}

// openIMText is the text of an OpenIM text message's content ({"content": "..."}).
func openIMText(content string) string {
	var c struct {
		Content string `json:"content"`
	}
	if json.Unmarshal([]byte(content), &c) != nil {
		return content
	}
	return c.Content
}
