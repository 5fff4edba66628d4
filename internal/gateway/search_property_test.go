package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// searchSeed picks the random run of TestSearchIndexMatchesTheStore; a failure names it, so
// that `go test -run TestSearchIndexMatchesTheStore ./internal/gateway/ -args -search.seed=N`
// replays it.
var searchSeed = flag.Int64("search.seed", 1, "seed of TestSearchIndexMatchesTheStore's random operations")

// The property test's world: four users, three single chats and a group dave is not in.
var (
	propUsers   = []string{"alice", "bob", "carol", "dave"}
	propMembers = map[string][]string{
		"si_alice_bob":   {"alice", "bob"},
		"si_alice_carol": {"alice", "carol"},
		"si_bob_dave":    {"bob", "dave"},
		"sg_crew":        {"alice", "bob", "carol"},
	}
	propVocabulary = []string{"kiwi", "mango", "lemon", "olive", "pear", "我们明天去北京开会", "北京烤鸭"}
	propQueries    = []string{"kiwi", "mango", "olive", "北京"}
)

// Ensure that after random sends, revokes, deletes for me and for everyone, clears, writers
// that die at a random step and a gateway closed in the middle of a burst of sends (a second
// gateway on the same stores finishing what it left), each user's search for each word finds
// exactly the messages the store shows them holding that word, with the count to match.
func TestSearchIndexMatchesTheStore(t *testing.T) {
	onEachSearchEngineWith(t, func(c *gateway.Config) {
		c.IntentHandoff, c.RelayInterval = testHandoff, testRelayInterval
		c.Handler.RateLimit = -1
	}, testSearchIndexMatchesTheStore)
}

// propMessage is what the test knows of a message it saw acknowledged.
type propMessage struct {
	conv, sender, content string
	seq                   int64
}

func testSearchIndexMatchesTheStore(t *testing.T, g *gatewaytest.Gateway) {
	seed := *searchSeed
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	convs := slices.Sorted(func(yield func(string) bool) {
		for c := range propMembers {
			if !yield(c) {
				return
			}
		}
	})
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "crew", "m": []map[string]any{
		{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}, {"userID": "carol"}}}, &struct{}{})

	var sent []propMessage // acknowledged sends, for revokes and deletes to pick from
	text := func() string {
		words := make([]string, 1+rng.Intn(3))
		for i := range words {
			words[i] = propVocabulary[rng.Intn(len(propVocabulary))]
		}
		return strings.Join(words, " ")
	}
	sendVars := func(conv, sender, content string) map[string]any {
		in := map[string]any{"contentType": 101, "content": content}
		if strings.HasPrefix(conv, "sg_") {
			in["groupID"] = strings.TrimPrefix(conv, "sg_")
		} else {
			for _, m := range propMembers[conv] {
				if m != sender {
					in["recvID"] = m
				}
			}
		}
		return in
	}
	// What the test knows must read as OK: acknowledged sends that no revoke, delete or clear
	// may have touched.
	touched, cleared := map[string]bool{}, map[string]bool{}
	pickSent := func() (propMessage, bool) {
		if len(sent) == 0 {
			return propMessage{}, false
		}
		m := sent[rng.Intn(len(sent))]
		touched[m.conv+"/"+itoa(m.seq)] = true
		return m, true
	}
	clientIDs := 0

	// One random operation on g; errors a rule answers (revoking a message deleted for
	// everyone, say) are part of the run, not failures.
	operate := func(g *gatewaytest.Gateway) {
		switch op := rng.Intn(100); {
		case op < 55: // a send through the API
			conv := convs[rng.Intn(len(convs))]
			sender := propMembers[conv][rng.Intn(len(propMembers[conv]))]
			content := text()
			m := g.SendGQL(g.Token(sender), sendVars(conv, sender, content))
			sent = append(sent, propMessage{conv: conv, sender: sender, content: content, seq: m.Seq})
		case op < 65: // the sender revokes
			if m, ok := pickSent(); ok {
				g.Post(g.Token(m.sender), revokeMutation, map[string]any{"c": m.conv, "s": m.seq})
			}
		case op < 75: // a member deletes for themselves
			if m, ok := pickSent(); ok {
				who := propMembers[m.conv][rng.Intn(len(propMembers[m.conv]))]
				g.Post(g.Token(who), deleteMutation, map[string]any{"c": m.conv, "s": []int64{m.seq}})
			}
		case op < 80: // the sender deletes for everyone
			if m, ok := pickSent(); ok {
				g.Post(g.Token(m.sender), deleteMutation, map[string]any{"c": m.conv, "s": []int64{m.seq}, "all": true})
			}
		case op < 84: // a member clears the conversation for themselves
			conv := convs[rng.Intn(len(convs))]
			who := propMembers[conv][rng.Intn(len(propMembers[conv]))]
			cleared[who+"/"+conv] = true
			g.Post(g.Token(who), clearMutation, map[string]any{"c": conv})
		default: // a writer that dies at a random step of a send, revoke or delete
			conv := convs[rng.Intn(len(convs))]
			ctx := context.Background()
			switch kind := rng.Intn(3); {
			case kind == 0 || len(sent) == 0:
				steps := []string{"intent", "store", "invalidate", "record", "announce"}
				w := dyingIndexedWriter(g, steps[rng.Intn(len(steps))])
				sender := propMembers[conv][rng.Intn(len(propMembers[conv]))]
				in := sendVars(conv, sender, text())
				msg := &im.Message{SendID: sender, ContentType: 101, Content: in["content"].(string), SessionType: im.SessionSingle}
				if gid, ok := in["groupID"].(string); ok {
					msg.GroupID, msg.SessionType = gid, im.SessionGroup
				} else {
					msg.RecvID = in["recvID"].(string)
				}
				clientIDs++
				msg.ClientMsgID = fmt.Sprintf("dying-%d", clientIDs)
				_, _ = w.Ingest(ctx, []*im.Message{msg})
			default:
				m, _ := pickSent()
				c, err := im.ParseConversationID(m.conv)
				if err != nil {
					t.Fatal(err)
				}
				steps := []string{"intent", "store", "announce"}
				w := dyingIndexedWriter(g, steps[rng.Intn(len(steps))])
				if kind == 1 {
					_, _ = w.Revoke(ctx, ingest.Actor{UserID: m.sender}, c, m.seq, time.Now().UnixMilli())
				} else {
					who := propMembers[m.conv][rng.Intn(len(propMembers[m.conv]))]
					_, _ = w.Delete(ctx, ingest.Actor{UserID: who}, c, []int64{m.seq}, rng.Intn(4) == 0 && who == m.sender)
				}
			}
		}
	}

	const operations, burst = 120, 12
	for i := 0; i < operations/2; i++ {
		operate(g)
	}

	// A burst of sends with the gateway closed under it: some are acknowledged, some fail at
	// whatever step they had reached, leaving their intents behind.
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		conv := convs[rng.Intn(len(convs))]
		sender := propMembers[conv][rng.Intn(len(propMembers[conv]))]
		vars := map[string]any{"in": sendVars(conv, sender, text())}
		token := g.Token(sender)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = gatewaytest.Call(g.URL, token, "", gatewaytest.SendMutation, vars)
		}()
	}
	time.Sleep(time.Duration(5+rng.Intn(30)) * time.Millisecond)
	if err := g.Gateway.Close(); err != nil {
		t.Logf("closing the first gateway: %v", err)
	}
	wg.Wait()
	// The second gateway opens the same stores and the same index (the first's data
	// directory holds its Bleve index) and its relay finishes the intents left behind.
	g = gatewaytest.New(t, g.Gateway.Config)
	for i := operations / 2; i < operations; i++ {
		operate(g)
	}

	// The relay has settled once it has tried every intent left: what it finished is
	// dropped, and what stays is a change the store does not show (its writer died before
	// writing it), kept for IntentGrace in case it still arrives. A try under way may still
	// be indexing, so the comparison is given a few seconds to hold.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		due, err := g.Store.DueIntents(context.Background(), time.Now().Add(time.Hour), 100)
		if err == nil && !slices.ContainsFunc(due, func(it chunkstore.Intent) bool { return it.Tries == 0 }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: the relay has not tried the intents left: %+v (%v)", seed, due, err)
		}
	}
	known := map[string][]propMessage{}
	for _, m := range sent {
		for _, user := range propMembers[m.conv] {
			if !touched[m.conv+"/"+itoa(m.seq)] && !cleared[user+"/"+m.conv] {
				known[user] = append(known[user], m)
			}
		}
	}
	var problems []string
	hits := 0
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(time.Second) {
		if hits, problems = searchMismatches(t, g, convs, known); len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range problems {
		t.Errorf("seed %d: %s", seed, p)
	}
	if hits == 0 {
		t.Errorf("seed %d: no search found anything: the run tested nothing", seed)
	}
	t.Logf("seed %d: %d sends acknowledged, %d hits compared", seed, len(sent), hits)
}

// searchMismatches compares, for each user and each of propQueries, the search's hits (all
// pages) and count with what the user's history shows as OK and holding the word; and checks
// that the history shows each message known to be readable (known, by user). hits counts the
// hits compared.
func searchMismatches(t *testing.T, g *gatewaytest.Gateway, convs []string, known map[string][]propMessage) (hits int, problems []string) {
	t.Helper()
	for _, user := range propUsers {
		token := g.Token(user)
		readable := map[string]string{} // conv/seq -> content, of what user's history shows as OK
		for _, conv := range convs {
			if slices.Contains(propMembers[conv], user) {
				for k, v := range readableHistory(t, g, token, conv) {
					readable[k] = v
				}
			}
		}
		for _, m := range known[user] {
			if k := m.conv + "/" + itoa(m.seq); readable[k] != m.content {
				problems = append(problems, fmt.Sprintf("%s's history shows %s as %q, acknowledged as %q", user, k, readable[k], m.content))
			}
		}
		n, found := searchesMatch(t, g, token, user, readable, "the store shows")
		hits += n
		problems = append(problems, found...)
	}
	return hits, problems
}

// searchesMatch runs every propQueries search as user (token) on g, through every page, and
// tells where its hits or count differ from the messages of readable (key: text) that hold
// the word; source names what readable was read from.
func searchesMatch(t *testing.T, g *gatewaytest.Gateway, token, user string, readable map[string]string, source string) (hits int, problems []string) {
	t.Helper()
	for _, q := range propQueries {
		var want []string
		for k, content := range readable {
			if holdsWord(content, q) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		got, count, exact := searchAllPages(t, g, token, q)
		slices.Sort(got)
		hits += len(got)
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s searching %q finds %v, %s %v", user, q, got, source, want))
		}
		if count != len(want) || !exact {
			problems = append(problems, fmt.Sprintf("%s searching %q counts %d (exact %v), %s %d", user, q, count, exact, source, len(want)))
		}
	}
	return hits, problems
}

// dyingIndexedWriter is a writer on g's stores and g's search index that stops at step, as if
// its process died there.
func dyingIndexedWriter(g *gatewaytest.Gateway, step string) *ingest.Ingester {
	ledger := imsync.NewLedger(g.Store, g.Cache, imsync.Options{IntentHandoff: testHandoff, Fault: func(s string) error {
		if s == step {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	return ingest.New(g.Store, g.Cache, ledger, ingest.Options{Search: g.Gateway.Search})
}

// holdsWord says whether a search for q should find content: a Latin word as one of its
// words, a CJK word as a substring.
func holdsWord(content, q string) bool {
	if q[0] < 0x80 {
		return slices.Contains(strings.Fields(content), q)
	}
	return strings.Contains(content, q)
}

// readableHistory reads all of conv as token's user may and returns the messages that read
// as OK, by "conversation/seq", with their contents.
func readableHistory(t *testing.T, g *gatewaytest.Gateway, token, conv string) map[string]string {
	t.Helper()
	out := map[string]string{}
	vars := map[string]any{"c": conv, "limit": 50}
	for page := 0; ; page++ {
		if page > 20 {
			t.Fatalf("history of %s does not end", conv)
		}
		var h historyJSON
		g.Query(token, historyQuery, vars, &h)
		msgs := h.Conversation.History.Messages
		for _, m := range msgs {
			if m.Status == "OK" && m.Content != nil {
				out[conv+"/"+itoa(m.Seq)] = *m.Content
			}
		}
		if !h.Conversation.History.HasMoreBefore || len(msgs) == 0 {
			return out
		}
		lowest := msgs[0].Seq
		for _, m := range msgs {
			lowest = min(lowest, m.Seq)
		}
		vars["before"] = lowest
	}
}

// searchAllPages follows a search's pages to the end and returns every hit, with the count
// the first page gave.
func searchAllPages(t *testing.T, g *gatewaytest.Gateway, token, q string) (keys []string, count int, exact bool) {
	t.Helper()
	vars := map[string]any{"q": q, "n": 7}
	for page := 0; ; page++ {
		got, res := found(t, g, token, vars)
		keys = append(keys, got...)
		if page == 0 {
			count, exact = res.Count, res.CountIsExact
		}
		if !res.HasMore {
			return keys, count, exact
		}
		if res.EndCursor == nil || page > 100 {
			t.Fatalf("searching %q: page %d has more but no cursor", q, page)
		}
		vars["after"] = *res.EndCursor
	}
}
