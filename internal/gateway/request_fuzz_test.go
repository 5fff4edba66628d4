package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// FuzzGraphQLRequest sends whatever body and token a client may send through the real handler,
// on a real Redis and FerretDB: every answer is a GraphQL JSON answer with a status the
// GraphQL-over-HTTP draft allows, never a server error, a panic, or an INTERNAL error (a
// client's bytes must never reach a bug).
func FuzzGraphQLRequest(f *testing.F) {
	g := gatewaytest.StartWith(f, func(c *gateway.Config) { c.Handler.RateLimit = -1; c.Handler.AnonymousRateLimit = -1 })
	g.Send("alice", "bob", "", 120)
	alice := g.Token("alice")
	handler := g.Handler()
	for _, s := range []struct{ body, token string }{
		{`{"query":"{ viewer { userID totalUnread conversations(first: 3) { nodes { id unreadCount lastMessage { seq content } } } } }"}`, alice},
		{`{"query":"query($c: ID!, $s: [Int64!]!) { messages(conversationID: $c, seqs: $s) { seq status content } }","variables":{"c":"si_alice_bob","s":[1,100,101,9007199254740993]}}`, alice},
		{`{"query":"query($c: ID!, $b: Int64, $l: Int) { conversation(id: $c) { history(beforeSeq: $b, limit: $l) { messages { seq } hasMoreBefore } } }","variables":{"c":"si_alice_bob","b":"12","l":1e9}}`, alice},
		{`{"query":"mutation { markConversationRead(conversationID: \"si_alice_bob\", readSeq: -1) { readSeq } }"}`, alice},
		{`{"query":"mutation($in: SendMessageInput!) { sendMessage(input: $in) { seq } }","variables":{"in":{"recvID":"bob","contentType":101,"content":"fuzz","clientMsgID":"f1"}}}`, alice},
		{`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}}`, alice},
		{`{"query":"{ viewer { userID } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`, alice},
		{`{"query":"subscription { syncEvents { type } }"}`, alice},
		{`{"query":"{ a: viewer { userID } b: viewer { userID } ...F } fragment F on Query { viewer { userID } }"}`, alice},
		{`{"query":"{ viewer { userID } }"}`, "not-a-token"},
		{`{"query":"{ viewer { userID } }"}`, ""},
		{`{"query":"{"}`, alice},
		{`{"query":1}`, alice},
		{`null`, alice},
		{`{"query":"query($x: [[Int!]!]!) { viewer { userID } }","variables":{"x":[[1,2],[3]]}}`, alice},
	} {
		f.Add([]byte(s.body), s.token)
	}
	f.Fuzz(func(t *testing.T, body []byte, token string) {
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		var answer struct {
			Data   json.RawMessage `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("answer to %q is not JSON: %v: %s", body, err, rec.Body)
		}
		if answer.Data == nil && len(answer.Errors) == 0 {
			t.Fatalf("answer to %q has neither data nor errors: %s", body, rec.Body)
		}
		for _, e := range answer.Errors {
			if e.Extensions["code"] == "INTERNAL" {
				t.Fatalf("INTERNAL error for %q: %s", body, rec.Body)
			}
		}
	})
}
