package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Attacks on the transport: what a client can make the gateway store or run by the way it
// sends its operations (persisted queries, WebSocket, fragments).

// apqExtensions are the extensions of an APQ request for query.
func apqExtensions(query string) map[string]any {
	sum := sha256.Sum256([]byte(query))
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
}

// persistedKeys are the persisted queries g's Redis holds.
func persistedKeys(t *testing.T, g *gatewaytest.Gateway) []string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: g.Redis.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	iter := rdb.Scan(ctx, 0, "msggate:apq:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// wsAnswer reads the answer to operation id on ws: its errors, whether it came as "next"
// (with data) or "error", then its "complete" when it has one.
func wsAnswer(t *testing.T, ws *gatewaytest.WS, id string) []gatewaytest.Error {
	t.Helper()
	m := ws.Next()
	if m["id"] != id {
		t.Fatalf("answer %v, want one to %s", m, id)
	}
	b, _ := json.Marshal(m["payload"])
	var errs []gatewaytest.Error
	switch m["type"] {
	case "next":
		var r gatewaytest.Response
		_ = json.Unmarshal(b, &r)
		errs = r.Errors
		if done := ws.Next(); done["type"] != "complete" || done["id"] != id {
			t.Fatalf("after the answer to %s: %v, want its complete", id, done)
		}
	case "error":
		_ = json.Unmarshal(b, &errs)
	default:
		t.Fatalf("answer to %s: %v", id, m)
	}
	return errs
}

// Ensure a query sent with its hash that does not parse, or does not validate, gets its usual
// error and leaves nothing in Redis: before the fix every text with a matching hash was kept
// for a day, parsed or not.
func TestAbuseUnparsablePersistedQuery(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	for _, c := range []struct{ query, code string }{
		{strings.Repeat("junk ", 1000), "GRAPHQL_PARSE_FAILED"},
		{`{ viewer { userID ` + strings.Repeat("x", 5000), "GRAPHQL_PARSE_FAILED"},
		{`{ viewer { secrets } }`, "GRAPHQL_VALIDATION_FAILED"},
		{`{ conversation { id } }`, "GRAPHQL_VALIDATION_FAILED"},
	} {
		_, r := g.PostBody(alice, requestBody(c.query, nil, apqExtensions(c.query)))
		if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != c.code {
			t.Errorf("%.30q: %+v, want %s", c.query, r.Errors, c.code)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 0 {
		t.Errorf("Redis holds %d persisted queries that never parsed or validated: %v", len(keys), keys)
	}
	// A query that does run is still kept.
	const valid = `{ viewer { userID } }`
	if _, r := g.PostBody(alice, requestBody(valid, nil, apqExtensions(valid))); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if keys := persistedKeys(t, g); len(keys) != 1 {
		t.Errorf("after a valid query: %v, want it kept", keys)
	}
}

// Ensure one user cannot fill Redis with persisted queries: past the bound on what one user
// registers (count and bytes), queries still run but are not kept, and another user still
// registers theirs.
func TestAbusePersistedQueryFlood(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.RateLimit = -1
		c.Handler.PersistedQueriesPerUser = 5
		c.Handler.PersistedQueryBytesPerUser = 8 << 10
	})
	mallory := g.Token("mallory")
	var sent int
	for i := range 20 {
		q := fmt.Sprintf(`{ v%d: viewer { userID } }`, i)
		_, r := g.PostBody(mallory, requestBody(q, nil, apqExtensions(q)))
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data), "mallory") {
			t.Fatalf("query %d: %s %+v, want it answered", i, r.Data, r.Errors)
		}
		sent += len(q)
	}
	if keys := persistedKeys(t, g); len(keys) != 5 {
		t.Errorf("one user registered %d queries of 20, want the bound of 5", len(keys))
	}

	// Bytes: a user with room in count is bounded by what the queries weigh.
	padded := func(i int) string { // about 3 KiB, in a comment the parser skips
		return fmt.Sprintf("# %s\n{ p%d: viewer { userID } }", strings.Repeat("x", 3<<10), i)
	}
	trudy := g.Token("trudy")
	for i := range 4 {
		q := padded(i)
		if _, r := g.PostBody(trudy, requestBody(q, nil, apqExtensions(q))); len(r.Errors) > 0 {
			t.Fatalf("padded query %d: %+v", i, r.Errors)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 5+2 {
		t.Errorf("after 4 queries of 3 KiB within 8 KiB: %d kept, want mallory's 5 and 2 of them", len(keys))
	}

	alice := g.Token("alice")
	const mine = `{ viewer { userID totalUnread } }`
	if _, r := g.PostBody(alice, requestBody(mine, nil, apqExtensions(mine))); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if _, r := g.PostBody(alice, requestBody("", nil, apqExtensions(mine))); len(r.Errors) > 0 {
		t.Errorf("another user's query, by its hash alone: %+v", r.Errors)
	}
}

// Ensure a client over its rate on a WebSocket is refused before its operation is read: a
// persisted query it sends is not stored, and even one that does not parse is answered with
// the rate limit, not a parse error (the parsing is work it must not cause).
func TestAbusePersistedQueryOverRateOnWebSocket(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.RateLimit, c.Handler.RateBurst = 0.001, 2 })
	ws := gatewaytest.ConnectWS(t, g.URL, g.Token("mallory"), gatewaytest.WSOptions{})
	for i := range 2 {
		id := fmt.Sprint("within-", i)
		ws.Write(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": `{ viewer { userID } }`}})
		if errs := wsAnswer(t, ws, id); len(errs) > 0 {
			t.Fatalf("operation %d of a burst of 2: %+v", i, errs)
		}
	}
	for _, q := range []string{`{ a: viewer { userID } }`, `{ viewer { userID ` + strings.Repeat("x", 60<<10)} {
		ws.Write(map[string]any{"id": "over", "type": "subscribe", "payload": map[string]any{"query": q, "extensions": apqExtensions(q)}})
		errs := wsAnswer(t, ws, "over")
		if len(errs) == 0 || errs[0].Extensions["code"] != "LIMIT_EXCEEDED" || errs[0].Extensions["limit"] != "rate" {
			t.Errorf("%.30q over the rate: %+v, want the rate limit", q, errs)
		}
	}
	if keys := persistedKeys(t, g); len(keys) != 0 {
		t.Errorf("Redis holds %v, stored for a client over its rate", keys)
	}
}

// Ensure a catch-up read wrapped in fragments at the root is held to the store's admission as
// the plain field is: with the only turn at the store taken by a send that hangs there, it is
// refused at once with 503, not let through to queue at the store.
func TestAbuseCatchUpReadInFragmentsSkipsAdmission(t *testing.T) {
	gate := newStoreGate()
	g := gatewaytest.StartObserved(t, gateway.Observers{OnMongoCommand: gate.hold}, func(c *gateway.Config) {
		c.StoreRequests = 1
		c.Handler.RequestTimeout = 10 * time.Second
		c.Handler.RateLimit = -1
	})
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "before"})

	gate.close()
	var stuck sync.WaitGroup
	stuck.Go(func() {
		r := g.Post(alice, gatewaytest.SendMutation, map[string]any{"in": map[string]any{"recvID": "bob", "contentType": 101, "content": "held"}})
		if len(r.Errors) > 0 {
			t.Errorf("the held send failed once the store answered: %+v", r.Errors)
		}
	})
	defer stuck.Wait()
	defer gate.reopen()
	gatewaytest.WaitFor(t, 10*time.Second, "the send does not take its turn", func() bool {
		return g.StoreRequests.Stats().InFlight == 1
	})
	// Its turn is held past the longest wait: what needs the store now cannot get in.
	time.Sleep(1200 * time.Millisecond)
	for _, q := range []string{
		`{ ...F } fragment F on Query { syncState(first: 10) { token } }`,
		`{ ... on Query { ... { syncState(first: 10) { token } } } }`,
		`{ ...A } fragment A on Query { ...B } fragment B on Query { syncState(first: 10) { token } }`,
	} {
		began := time.Now()
		resp, r, err := gatewaytest.Call(g.URL, alice, "", q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 1500*time.Millisecond {
			t.Errorf("%s: answered after %v, want at once", q, took)
		}
		refusedAtOnce(t, q, resp, r)
	}
}
