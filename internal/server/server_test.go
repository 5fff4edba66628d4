package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/im"
)

var testSecret = []byte("server-test-secret")

// testSettings and testDependencies are the handler's of the tests: no rate limit, testSecret's
// tokens, no logs.
func testSettings() Settings { return Settings{RateLimit: -1} }

func testDependencies() Dependencies {
	return Dependencies{JWTSecret: testSecret, Logger: slog.New(slog.DiscardHandler)}
}

// testToken is a token of user's, valid for an hour.
func testToken(t *testing.T, user string) string {
	t.Helper()
	token, err := auth.Issue(testSecret, user, false, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// askHandler runs query through h as alice and returns its answer.
func askHandler(t *testing.T, h http.Handler, query string) map[string]any {
	t.Helper()
	return serveJSON(t, h, testToken(t, "alice"), map[string]any{"query": query})
}

// serveJSON posts body to h as JSON, with token as the bearer when there is one, and returns
// the answer.
func serveJSON(t *testing.T, h http.Handler, token string, body map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/query", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %q: %v", rec.Body, err)
	}
	return out
}

// noConversations is a graph.ConversationSource of a store that holds no conversation, for
// tests about the server rather than what it serves.
type noConversations struct{}

func (noConversations) ParseConversationID(id string) (im.Conversation, error) {
	return im.ParseConversationID(id)
}

func (noConversations) CanRead(_ context.Context, _ string, ids []string) ([]bool, error) {
	return make([]bool, len(ids)), nil
}

func (noConversations) States(_ context.Context, _ string, ids []string) ([]im.SeqState, error) {
	return make([]im.SeqState, len(ids)), nil
}

func (noConversations) UserConversations(context.Context, string) ([]im.SeqState, error) {
	return nil, nil
}
