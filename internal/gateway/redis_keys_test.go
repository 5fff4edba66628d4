package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// keyFamilies are the Redis keys msggate creates, each with the longest TTL it may carry
// (docs/architecture.md, "What msggate keeps in Redis"). A key of no family fails the test: a
// new kind of key must say how it is bounded.
var keyFamilies = []struct {
	name    string
	pattern *regexp.Regexp
	maxTTL  time.Duration
}{
	{"cached chunk", regexp.MustCompile(`^msggate:\{[^}]+\}:chunk:\d+$`), 24 * time.Hour},
	{"conversation seq state", regexp.MustCompile(`^msggate:\{[^}]+\}:seqstate$`), 7 * 24 * time.Hour},
	{"seq allocator", regexp.MustCompile(`^msggate:\{[^}]+\}:alloc$`), 7 * 24 * time.Hour},
	{"allocator refill lock", regexp.MustCompile(`^msggate:\{[^}]+\}:alloclock$`), 5 * time.Second},
	{"user read state", regexp.MustCompile(`^msggate:\{u:[^}]+\}:readstate$`), 7 * 24 * time.Hour},
	{"conversation list", regexp.MustCompile(`^msggate:\{u:[^}]+\}:convs$`), 7 * 24 * time.Hour},
	{"conversation list version", regexp.MustCompile(`^msggate:\{u:[^}]+\}:convsv$`), 7 * 24 * time.Hour},
	{"group memberships", regexp.MustCompile(`^msggate:\{g:[^}]+\}:members$`), 7 * 24 * time.Hour},
	{"conversation order", regexp.MustCompile(`^msggate:\{u:[^}]+\}:order$`), 7 * 24 * time.Hour},
	{"event log head", regexp.MustCompile(`^msggate:\{u:[^}]+\}:log$`), cache.DefaultEventLogMaxAge},
	{"event log", regexp.MustCompile(`^msggate:\{u:[^}]+\}:events$`), cache.DefaultEventLogMaxAge},
	{"event keys", regexp.MustCompile(`^msggate:\{u:[^}]+\}:evkeys$`), cache.DefaultEventLogMaxAge},
	{"group stream", regexp.MustCompile(`^msggate:\{[^}]+\}:(log|events|evkeys)$`), cache.DefaultEventLogMaxAge},
	{"user rate bucket", regexp.MustCompile(`^msggate:\{u:[^}]+\}:rate$`), time.Hour},
	{"address rate bucket", regexp.MustCompile(`^msggate:\{a:[^}]+\}:rate$`), time.Hour},
	{"persisted query", regexp.MustCompile(`^msggate:apq:[0-9a-f]{64}$`), cache.DefaultPersistedQueryTTL},
	{"persisted query registrations", regexp.MustCompile(`^msggate:\{u:[^}]+\}:apq$`), cache.DefaultPersistedQueryTTL},
	{"live instance", regexp.MustCompile(`^msggate:instance:[0-9a-f]+$`), imsync.InstanceTTL},
	// One key, which must outlive every key that describes the store (a negative bound: it
	// does not expire).
	{"store identity", regexp.MustCompile(`^msggate:storeid$`), -1},
}

// Ensure every key a representative workload leaves in Redis expires within its family's
// bound (and event logs keep at most -event-log-len events): sends, reads, a conversation list
// page, syncState of a user who never had an event, syncDifference, a live subscription,
// mark-read, revoke, delete, clear, a group's change and a read of it, a persisted query, and
// refusals by the user and the address rate limits.
func TestEveryRedisKeyExpires(t *testing.T) {
	const logLen = 5
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.EventLogMaxLen = logLen })
	alice, bob, erin := g.Token("alice"), g.Token("bob"), g.Token("erin")
	const conv = "si_alice_bob"

	sub := gatewaytest.ConnectWS(t, g.URL, bob, gatewaytest.WSOptions{})
	sub.Subscribe(nil)
	gatewaytest.WaitFor(t, 10*time.Second, "bob's subscription reaches the hub", func() bool { return g.Hub.Subscribers() == 1 })
	for i := range 8 {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": fmt.Sprint("hi ", i)})
	}
	if ev := sub.NextEvent(); ev.Type != "NEW_MESSAGE" {
		t.Fatalf("live event %+v", ev)
	}
	g.Statuses(bob, conv, 1, 2, 3)
	g.Query(bob, `{ viewer { conversations(first: 5) { nodes { id } } } }`, nil, &struct{}{})
	var state struct{ SyncState struct{ Token string } }
	g.Query(bob, `{ syncState(first: 10) { token } }`, nil, &state)
	g.Query(erin, `{ syncState(first: 10) { token } }`, nil, &struct{}{}) // erin's log is created by this read
	g.Query(bob, `query($t: String!) { syncDifference(since: $t, limit: 10) { token } }`, map[string]any{"t": state.SyncState.Token}, &struct{}{})
	g.Query(bob, `mutation { markConversationRead(conversationID: "si_alice_bob", readSeq: 4) { readSeq } }`, nil, &struct{}{})
	g.Query(alice, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 5) { seq } }`, nil, &struct{}{})
	g.Query(bob, `mutation { deleteMessages(conversationID: "si_alice_bob", seqs: [6]) { seq } }`, nil, &struct{}{})
	g.Query(alice, `mutation { clearConversation(conversationID: "si_alice_bob") { minSeq } }`, nil, &struct{}{})
	g.Query(g.Admin(), groupMutation, map[string]any{"g": "team", "m": []map[string]any{{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}}}, &struct{}{})
	g.SendGQL(alice, map[string]any{"groupID": "team", "contentType": 101, "content": "hi team"})
	g.Query(bob, `{ conversation(id: "sg_team") { unreadCount } }`, nil, &struct{}{})

	const persisted = `{ viewer { userID } }`
	sum := sha256.Sum256([]byte(persisted))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	if _, r := g.PostBody(alice, requestBody(persisted, nil, ext)); len(r.Errors) > 0 {
		t.Fatalf("registering a persisted query: %+v", r.Errors)
	}

	strict := twin(g, func(c *gateway.Config) {
		c.Handler.RateLimit, c.Handler.RateBurst = 0.001, 1
		c.Handler.AnonymousRateLimit, c.Handler.AnonymousRateBurst = 0.001, 1
	})
	for _, token := range []string{g.Token("flood"), ""} {
		var last int
		for range 2 {
			resp, _ := strict.PostBody(token, requestBody(`{ __typename }`, nil, nil))
			last = resp.StatusCode
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("rate limit not reached (token %q): %d", token, last)
		}
	}

	rdb := redis.NewClient(&redis.Options{Addr: g.Redis.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[string]int{}
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		family := -1
		for i, f := range keyFamilies {
			if f.pattern.MatchString(key) {
				family = i
				break
			}
		}
		if family < 0 {
			t.Errorf("key %s belongs to no known family", key)
			continue
		}
		f := keyFamilies[family]
		seen[f.name]++
		ttl, err := rdb.PTTL(ctx, key).Result()
		switch {
		case err != nil:
			t.Fatal(err)
		case ttl == -2*time.Nanosecond:
			continue // expired since the scan saw it
		case ttl < 0 && f.maxTTL < 0:
		case ttl < 0:
			t.Errorf("%s (%s) never expires", key, f.name)
		case f.maxTTL < 0:
			t.Errorf("%s (%s) expires in %v: it must outlive every key that describes the store", key, f.name, ttl)
		case ttl > f.maxTTL:
			t.Errorf("%s (%s) lives %v, longer than %v", key, f.name, ttl, f.maxTTL)
		}
		if f.name == "conversation list" {
			if n := rdb.SCard(ctx, key).Val(); n > imsync.MaxConversationsPerUser {
				t.Errorf("%s holds %d conversations, more than the %d a list is read with", key, n, imsync.MaxConversationsPerUser)
			}
		}
		if f.name == "conversation order" {
			if n := rdb.ZCard(ctx, key).Val(); n > imsync.MaxConversationsPerUser+1 { // and the filled marker
				t.Errorf("%s holds %d conversations, more than the %d a list is read with", key, n, imsync.MaxConversationsPerUser)
			}
		}
		if f.name == "event log" {
			if n := rdb.LLen(ctx, key).Val(); n > logLen {
				t.Errorf("%s holds %d events, more than the %d kept", key, n, logLen)
			}
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for _, f := range keyFamilies {
		if f.name != "allocator refill lock" && seen[f.name] == 0 {
			t.Errorf("the workload left no %s key: it does not show that family expires", f.name)
		}
	}
	if erinLog := "msggate:{u:erin}:log"; rdb.Exists(ctx, erinLog).Val() != 1 {
		t.Errorf("%s, created by erin's syncState, is missing", erinLog)
	}
	t.Logf("keys by family: %v", seen)
}
