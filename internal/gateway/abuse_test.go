package gateway_test

// The abuse suite: what a client we do not expect sends a running gateway, each played over
// real HTTP or WebSocket against the real handler, asserting the refusal and that nothing was
// stored or leaked. A new hole found in the trust boundary gets its attack here, beside the
// others. The documented request limits (body size, tokens, depth, aliases, complexity, rate)
// are played by TestLimitsRefuseBeforeStoreWork and the connection limits by
// TestWebSocketConnectionLimits and TestAnonymousRateLimit; docs/security.md lists the defaults
// these tests hold the gateway to.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure bad input gets a clear error with a code and changes nothing.
func TestBadInputIsRefused(t *testing.T) {
	g := gatewaytest.Start(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "x"})

	many := make([]int64, 1001)
	for i := range many {
		many[i] = int64(i + 1)
	}
	forged, _ := auth.Issue([]byte("some-other-secret-0123456789abcdef"), "alice", false, time.Hour, time.Now())
	expired, _ := auth.Issue(g.Secret, "alice", false, time.Hour, time.Now().Add(-2*time.Hour))
	send := func(in map[string]any) map[string]any { return map[string]any{"in": in} }
	convQuery, messagesQuery, sendMutation := gatewaytest.ConversationQuery, gatewaytest.MessagesQuery, gatewaytest.SendMutation
	for _, tc := range []struct {
		name, token, query string
		vars               map[string]any
		code               string
	}{
		{"malformed conversation ID", alice, convQuery, map[string]any{"id": "si_bob_alice"}, "BAD_USER_INPUT"},
		{"unknown conversation kind", alice, convQuery, map[string]any{"id": "zz_1"}, "BAD_USER_INPUT"},
		{"unknown group", alice, convQuery, map[string]any{"id": "sg_nosuchgroup"}, "FORBIDDEN"},
		{"not a member", alice, convQuery, map[string]any{"id": "si_bob_carol"}, "FORBIDDEN"},
		{"seq 0", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{0}}, "BAD_USER_INPUT"},
		{"negative seq", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []int64{-3}}, "BAD_USER_INPUT"},
		{"seq not a number", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []any{"abc"}}, "BAD_USER_INPUT"},
		{"seq beyond int64", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": []any{1e30}}, "BAD_USER_INPUT"},
		{"limit beyond int32", alice, `{ conversation(id: "si_alice_bob") { history(limit: 99999999999) { messages { seq } } } }`, nil, "BAD_USER_INPUT"},
		{"1001 seqs", alice, messagesQuery, map[string]any{"c": "si_alice_bob", "s": many}, "LIMIT_EXCEEDED"},
		{"history limit 201", alice, `{ conversation(id: "si_alice_bob") { history(limit: 201) { messages { seq } } } }`, nil, "LIMIT_EXCEEDED"},
		{"history limit 0", alice, `{ conversation(id: "si_alice_bob") { history(limit: 0) { messages { seq } } } }`, nil, "BAD_USER_INPUT"},
		{"content over 64 KiB", alice, sendMutation, send(map[string]any{"recvID": "bob", "contentType": 101, "content": strings.Repeat("a", 64<<10+1)}), "LIMIT_EXCEEDED"},
		{"both receivers", alice, sendMutation, send(map[string]any{"recvID": "bob", "groupID": "g", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"message to self", alice, sendMutation, send(map[string]any{"recvID": "alice", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"bad receiver ID", alice, sendMutation, send(map[string]any{"recvID": "bo_b", "contentType": 101, "content": "x"}), "BAD_USER_INPUT"},
		{"notification by a user", alice, sendMutation, send(map[string]any{"recvID": "bob", "contentType": 1400, "content": "x", "options": map[string]any{"isNotNotification": false}}), "FORBIDDEN"},
		{"missing token", "", convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"forged token", forged, convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"expired token", expired, convQuery, map[string]any{"id": "si_alice_bob"}, "UNAUTHENTICATED"},
		{"garbage token", "not-a-jwt", sendMutation, send(map[string]any{"recvID": "bob", "contentType": 101, "content": "x"}), "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := g.ErrorCode(tc.token, tc.query, tc.vars); code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
		})
	}
	if c := g.Conversation(alice, "si_alice_bob"); c.MaxSeq != 1 {
		t.Errorf("refused requests stored something: maxSeq %d, want 1", c.MaxSeq)
	}
}

// Ensure a request body that is not a GraphQL request is the client's error, not an internal one.
func TestMalformedRequestBody(t *testing.T) {
	g := gatewaytest.Start(t)
	for _, body := range []string{"not json", `{"query": 42}`, `{"query": "{ viewer { userID } }", "variables": "x"}`} {
		resp, err := http.Post(g.URL+"/query", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out gatewaytest.Response
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Errorf("body %q: status %d, %+v, %v", body, resp.StatusCode, out.Errors, err)
		}
	}
}
