package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/server"
)

// instance is one more gateway process on a gateway's MongoDB and Redis, as a second replica
// behind a load balancer would be. Its Redis round trips are recorded in the gateway's
// RoundTrips.
type instance struct {
	*gatewaytest.Gateway
	mongoCommands atomic.Int64 // every MongoDB command this instance sent
}

// twin opens another gateway on g's servers with g's configuration, changed by tune.
func twin(g *gatewaytest.Gateway, tune func(*gateway.Config)) *instance {
	g.T.Helper()
	in := &instance{}
	cfg, obs := g.Config, g.Observers
	watched := obs.OnMongoCommand
	obs.OnMongoCommand = func(ctx context.Context, command, collection string) {
		in.mongoCommands.Add(1)
		if watched != nil {
			watched(ctx, command, collection)
		}
	}
	// Its relay looks for left intents in MongoDB every second: slowed to once an hour, so
	// that the commands counted are the requests' own (noStoreWork).
	cfg.RelayInterval = time.Hour
	if tune != nil {
		tune(&cfg)
	}
	m := gatewaytest.OpenObserved(g.T, cfg, obs, gatewaytest.Logger(g.T))
	in.Gateway = &gatewaytest.Gateway{Gateway: m, T: g.T, URL: gatewaytest.Serve(g.T, m), Redis: g.Redis, Mongo: g.Mongo,
		RoundTrips: g.RoundTrips, Observers: obs}
	in.mongoCommands.Store(0)
	g.RoundTrips.Take()
	return in
}

// noStoreWork fails when, since the last call, the instance sent a MongoDB command or made a
// Redis round trip other than the rate limiter's (its token script on the user's bucket) and
// the instance's heartbeat, which no request makes.
func (in *instance) noStoreWork(t *testing.T, what string) {
	t.Helper()
	if n := in.mongoCommands.Swap(0); n != 0 {
		t.Errorf("%s: %d MongoDB commands, want none", what, n)
	}
	for _, trip := range in.RoundTrips.Take() {
		if len(trip) == 1 && strings.HasPrefix(trip[0], "set ") && strings.Contains(trip[0], ":instance:") {
			continue // an instance's heartbeat, on its own schedule (sync.Outbox.Heartbeat)
		}
		if len(trip) == 1 && strings.HasSuffix(trip[0], ":storeid") {
			continue // the check of the store's identity, on its own schedule (sync.IdentityWatch)
		}
		if len(trip) != 1 || !strings.HasPrefix(trip[0], "eval") || !strings.HasSuffix(trip[0], ":rate") {
			t.Errorf("%s: Redis round trip %v, want none but the rate limiter's", what, trip)
		}
	}
}

// storeWork reports whether the instance asked MongoDB or read chunks or seq state from Redis
// since the last call.
func (in *instance) storeWork() bool {
	trips := in.RoundTrips.Take()
	return in.mongoCommands.Swap(0) > 0 || testenv.Matching(trips, ":chunk:")+testenv.Matching(trips, ":seqstate")+testenv.Matching(trips, ":read") > 0
}

func requestBody(query string, vars map[string]any, extensions map[string]any) []byte {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars, "extensions": extensions})
	return body
}

// refusedBy fails unless r is a LIMIT_EXCEEDED error from the named limit, with no data.
func refusedBy(t *testing.T, r gatewaytest.Response, limit string) {
	t.Helper()
	if len(r.Errors) == 0 {
		t.Fatalf("not refused: data %s", r.Data)
	}
	e := r.Errors[0]
	if e.Extensions["code"] != graph.CodeLimitExceeded || e.Extensions["limit"] != limit {
		t.Fatalf("error %q %v, want code %s from limit %q", e.Message, e.Extensions, graph.CodeLimitExceeded, limit)
	}
	if len(r.Data) > 0 && string(r.Data) != "null" {
		t.Errorf("a refused request answered data %s", r.Data)
	}
}

// Ensure each limit refuses its request with LIMIT_EXCEEDED, naming the limit, before any
// store is asked, while the same request within the limit runs.
func TestLimitsRefuseBeforeStoreWork(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 3)
	// The schema nests at most 7 fields deep (no type leads back to an earlier one), so the
	// default of 12 cannot be reached: this instance lowers it to see it work.
	in := twin(g, func(c *gateway.Config) { c.Handler.MaxDepth = 4 })
	alice := in.Token("alice")
	in.Post(alice, `{ viewer { userID } }`, nil) // the rate limiter's script is loaded now
	in.storeWork()

	const conv = `conversation(id: "si_alice_bob") { maxSeq lastMessage { seq } }`
	aliases := func(n int) string {
		var q strings.Builder
		q.WriteString("{")
		for i := range n {
			fmt.Fprintf(&q, " c%d: %s", i, conv)
		}
		return q.String() + " }"
	}
	tokens := "{ " + strings.Repeat(conv+" ", 1200) + "}" // 13 tokens each: 15602
	seqs := make([]int64, 1000)
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	const threeTimes1000Seqs = `query($s: [Int64!]!) { a: messages(conversationID: "si_alice_bob", seqs: $s) { revoke { userID } }
		b: messages(conversationID: "si_alice_bob", seqs: $s) { revoke { userID } }
		c: messages(conversationID: "si_alice_bob", seqs: $s) { revoke { userID } } }`
	const deep = `{ viewer { conversations { nodes { lastMessage { revoke { userID } } } } } }`
	twoTimes1000Seqs := threeTimes1000Seqs[:strings.Index(threeTimes1000Seqs, "c: messages")] + "}"
	for _, tc := range []struct {
		limit, query, within string
	}{
		{"tokens", tokens, "{ " + strings.Repeat(conv+" ", 10) + "}"},
		{"depth", deep, `{ viewer { conversations { nodes { maxSeq } } } }`},
		{"aliases", aliases(31), aliases(30)},
		{"complexity", threeTimes1000Seqs, twoTimes1000Seqs},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			vars := map[string]any{"s": seqs}
			_, r := in.PostBody(alice, requestBody(tc.query, vars, nil))
			refusedBy(t, r, tc.limit)
			in.noStoreWork(t, tc.limit)
			if r := in.Post(alice, tc.within, vars); len(r.Errors) > 0 {
				t.Fatalf("within the limit: %+v", r.Errors)
			}
			if !in.storeWork() {
				t.Errorf("within the limit, the request did not reach the store: the check above proves nothing")
			}
		})
	}

	t.Run("body", func(t *testing.T) {
		big := requestBody("{ "+conv+" }", map[string]any{"pad": strings.Repeat("x", 1<<20)}, nil)
		resp, r := in.PostBody(alice, big)
		refusedBy(t, r, "bodySize")
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
		in.noStoreWork(t, "body with Content-Length")

		// Without a Content-Length the body is cut off while it is read.
		req, _ := http.NewRequest(http.MethodPost, in.URL+"/query", io.MultiReader(bytes.NewReader(big)))
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		resp, r = in.Do(req, alice)
		refusedBy(t, r, "bodySize")
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
		in.noStoreWork(t, "chunked body")

		justUnder := requestBody("{ "+conv+" }", map[string]any{"pad": strings.Repeat("x", 1<<20-200)}, nil)
		if _, r := in.PostBody(alice, justUnder); len(r.Errors) > 0 {
			t.Fatalf("a body just under 1 MiB: %+v", r.Errors)
		}
	})
}

// introspectionQuery is the query GraphiQL sends to learn the schema: graphql-js 16's
// getIntrospectionQuery with every option on.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    description
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name description isRepeatable locations args(includeDeprecated: true) { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL isOneOf
  fields(includeDeprecated: true) {
    name description
    args(includeDeprecated: true) { ...InputValue }
    type { ...TypeRef }
    isDeprecated deprecationReason
  }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue {
  name description type { ...TypeRef } defaultValue isDeprecated deprecationReason
}
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }
}`

// fieldDepth is the plain nesting depth of an operation, fragments written out in place.
func fieldDepth(doc *ast.QueryDocument, set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch sel := sel.(type) {
		case *ast.Field:
			d = 1 + fieldDepth(doc, sel.SelectionSet)
		case *ast.InlineFragment:
			d = fieldDepth(doc, sel.SelectionSet)
		case *ast.FragmentSpread:
			d = fieldDepth(doc, doc.Fragments.ForName(sel.Name).SelectionSet)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// Ensure GraphiQL's introspection query, deeper than the depth limit, runs with every limit
// on (introspection does not count towards the depth), and is refused as FORBIDDEN when
// introspection is switched off, while ordinary queries still run.
func TestIntrospectionUnderLimits(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Input: introspectionQuery})
	if err != nil {
		t.Fatal(err)
	}
	if d := fieldDepth(doc, doc.Operations[0].SelectionSet); d <= server.DefaultMaxDepth {
		t.Fatalf("the introspection query nests %d deep; this test is meant to show one deeper than %d", d, server.DefaultMaxDepth)
	}
	g := gatewaytest.Start(t)
	var out struct {
		Schema struct {
			QueryType struct{ Name string }
			Types     []struct{ Name string }
		} `json:"__schema"`
	}
	g.Query("", introspectionQuery, nil, &out)
	if out.Schema.QueryType.Name != "Query" || len(out.Schema.Types) < 10 {
		t.Fatalf("introspection answered %+v", out.Schema)
	}

	off := twin(g, func(c *gateway.Config) { c.Handler.Introspection = false })
	for _, q := range []string{introspectionQuery, `{ __type(name: "Message") { name } }`} {
		if code := off.ErrorCode("", q, nil); code != "FORBIDDEN" {
			t.Errorf("introspection switched off: code %q, want FORBIDDEN", code)
		}
	}
	var typename struct {
		Typename string `json:"__typename"`
	}
	off.Query("", `{ __typename }`, nil, &typename)
	if typename.Typename != "Query" {
		t.Errorf("__typename with introspection off: %+v", typename)
	}
}

// Ensure a user's burst is shared by every instance on the same Redis, a refusal carries a
// retry hint and does no store work, other users and anonymous requests are not held back, and
// when Redis is down requests go through rather than fail.
func TestRateLimitAcrossInstances(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 2)
	// At 0.001 requests a second the bucket does not refill while the test runs.
	slow := func(c *gateway.Config) { c.Handler.RateLimit, c.Handler.RateBurst = 0.001, 3 }
	one, two := twin(g, slow), twin(g, slow)
	alice := g.Token("alice")
	const q = `query($id: ID!) { conversation(id: $id) { maxSeq unreadCount } }`
	vars := map[string]any{"id": "si_alice_bob"}
	for i := range 3 {
		if r := one.Post(alice, q, vars); len(r.Errors) > 0 {
			t.Fatalf("request %d of a burst of 3: %+v", i+1, r.Errors)
		}
	}
	one.storeWork()

	for _, in := range []*instance{one, two} {
		resp, r := in.PostBody(alice, requestBody(q, vars, nil))
		refusedBy(t, r, "rate")
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("status %d, want 429", resp.StatusCode)
		}
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || after < 999 || after > 1000 {
			t.Errorf("Retry-After %q, want about 1000 seconds (one token at 0.001 a second)", resp.Header.Get("Retry-After"))
		}
		if ms, _ := r.Errors[0].Extensions["retryAfterMs"].(float64); ms < 999_000 || ms > 1_000_000 {
			t.Errorf("extensions.retryAfterMs %v, want about 1000000", r.Errors[0].Extensions["retryAfterMs"])
		}
		in.noStoreWork(t, "rate limited")
	}

	if r := two.Post(g.Token("bob"), q, vars); len(r.Errors) > 0 {
		t.Errorf("another user is held back by alice's bucket: %+v", r.Errors)
	}
	for range 5 {
		if r := two.Post("", `{ __typename }`, nil); len(r.Errors) > 0 {
			t.Fatalf("anonymous request refused: %+v", r.Errors)
		}
	}

	g.Redis.Stop()
	var out struct{ Conversation gatewaytest.Conversation }
	one.Query(alice, q, vars, &out)
	if out.Conversation.MaxSeq != 2 {
		t.Errorf("with Redis down (limiter open, reads from MongoDB): %+v", out.Conversation)
	}
}

// Ensure a request that runs out of its time answers LIMIT_EXCEEDED from the timeout, not a
// store failure, and the gateway serves the next request.
func TestRequestTimeout(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 2)
	in := twin(g, func(c *gateway.Config) { c.Handler.RequestTimeout = time.Nanosecond })
	r := in.Post(in.Token("alice"), gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2}})
	refusedBy(t, r, "timeout")
	if msg := r.Errors[0].Message; !strings.Contains(msg, "did not finish within 1ns") {
		t.Errorf("message %q does not say the request timed out", msg)
	}
	var out struct{ Messages []gatewaytest.Message }
	g.Query(g.Token("alice"), gatewaytest.MessagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{1, 2}}, &out)
	if len(out.Messages) != 2 {
		t.Errorf("with the default timeout: %+v", out.Messages)
	}
}

// Ensure automatic persisted queries: an unknown hash asks for the query, the query with its
// hash runs and registers it, then the hash alone runs, on this instance and on another one
// (the query is kept in Redis), over POST and GET. A hash that is not the query's is the
// client's error. Anonymous requests run with a hash but register nothing.
func TestPersistedQueries(t *testing.T) {
	g := gatewaytest.Start(t)
	g.Send("bob", "alice", "", 2)
	alice := g.Token("alice")
	const q = `query($id: ID!) { conversation(id: $id) { maxSeq } }`
	sum := sha256.Sum256([]byte(q))
	apq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	vars := map[string]any{"id": "si_alice_bob"}
	maxSeq := func(what string, r gatewaytest.Response) {
		t.Helper()
		var out struct{ Conversation struct{ MaxSeq int64 } }
		if len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", what, r.Errors)
		}
		if err := json.Unmarshal(r.Data, &out); err != nil || out.Conversation.MaxSeq != 2 {
			t.Fatalf("%s: data %s", what, r.Data)
		}
	}

	_, r := g.PostBody(alice, requestBody("", vars, apq))
	if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "PERSISTED_QUERY_NOT_FOUND" {
		t.Fatalf("unknown hash: %+v", r)
	}
	_, r = g.PostBody(alice, requestBody(q+" ", vars, apq))
	if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
		t.Fatalf("a hash that is not the query's: %+v", r)
	}
	_, r = g.PostBody(alice, requestBody(q, vars, apq))
	maxSeq("hash and query", r)
	_, r = g.PostBody(alice, requestBody("", vars, apq))
	maxSeq("hash alone", r)

	other := twin(g, nil)
	_, r = other.PostBody(alice, requestBody("", vars, apq))
	maxSeq("hash alone, another instance", r)
	ext, _ := json.Marshal(apq)
	v, _ := json.Marshal(vars)
	req, _ := http.NewRequest(http.MethodGet, other.URL+"/query?extensions="+url.QueryEscape(string(ext))+"&variables="+url.QueryEscape(string(v)), nil)
	_, r = other.Do(req, alice)
	maxSeq("hash alone over GET", r)

	const anon = `{ __typename }`
	sum = sha256.Sum256([]byte(anon))
	anonAPQ := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	if _, r := g.PostBody("", requestBody(anon, nil, anonAPQ)); len(r.Errors) > 0 {
		t.Fatalf("anonymous hash and query: %+v", r.Errors)
	}
	if _, r := g.PostBody("", requestBody("", nil, anonAPQ)); len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "PERSISTED_QUERY_NOT_FOUND" {
		t.Errorf("an anonymous request registered its query: %+v", r)
	}
}

// Ensure the complexity limit holds however often a query is sent: one without variables
// (priced once, then from memory) is refused every time it is over the limit and runs every
// time it is within, and one with variables is priced by each request's values.
func TestComplexityOfQueriesSentAgain(t *testing.T) {
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.Handler.MaxComplexity = 50 })
	g.Send("bob", "alice", "", 1)
	alice := g.Token("alice")
	const over = `{ viewer { conversations(first: 100) { nodes { lastMessage { seq } } } } }`
	const within = `{ viewer { conversations(first: 10) { nodes { lastMessage { seq } } } } }`
	const byVariable = `query($n: Int) { viewer { conversations(first: $n) { nodes { lastMessage { seq } } } } }`
	for round := range 3 {
		refusedBy(t, g.Post(alice, over, nil), "complexity")
		if r := g.Post(alice, within, nil); len(r.Errors) > 0 {
			t.Fatalf("round %d, within the limit: %+v", round, r.Errors)
		}
		if r := g.Post(alice, byVariable, map[string]any{"n": 10}); len(r.Errors) > 0 {
			t.Fatalf("round %d, within the limit by its variables: %+v", round, r.Errors)
		}
		refusedBy(t, g.Post(alice, byVariable, map[string]any{"n": 100}), "complexity")
	}
}
