package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	gosync "sync"
	"testing"
	"time"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/devtools/graphqltest"
)

// recordingQueries is a PersistedQueryStore that keeps what it is asked to register, within
// a bound of its own (keep), and remembers the bounds it was given.
type recordingQueries struct {
	mu       gosync.Mutex
	kept     map[string]string
	keep     bool
	asked    int
	maxCount int
	maxBytes int64
}

func (r *recordingQueries) Get(_ context.Context, hash string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, ok := r.kept[hash]
	return q, ok
}

func (r *recordingQueries) Register(_ context.Context, _, hash, query string, maxQueries int, maxBytes int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	r.maxCount, r.maxBytes = maxQueries, maxBytes
	if !r.keep {
		return false, nil
	}
	r.kept[hash] = query
	return true, nil
}

// postPersisted sends query with its APQ hash to h, as token's user ("" for none), and
// returns the answer.
func postPersisted(t *testing.T, h http.Handler, token, query string) map[string]any {
	t.Helper()
	sum := sha256.Sum256([]byte(query))
	return serveJSON(t, h, token, map[string]any{"query": query, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
}

// Ensure a query sent with its hash is registered only once it parsed, validated and passed
// the limits, only for an authenticated user, and with the handler's bounds: one that fails
// gets its usual error and is not registered; one the store refuses still runs.
func TestPersistedQueryRegisteredOnlyWhenValid(t *testing.T) {
	store := &recordingQueries{kept: map[string]string{}, keep: true}
	settings, deps := testSettings(), testDependencies()
	deps.PersistedQueries = store
	settings.MaxDepth = 3
	settings.PersistedQueriesPerUser = 7
	h := NewHandler(&graph.Resolver{Conversations: noConversations{}}, settings, deps)
	token, err := auth.Issue(testSecret, "alice", false, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	for name, c := range map[string]struct{ query, code string }{
		"not GraphQL":      {`{ viewer { userID `, "GRAPHQL_PARSE_FAILED"},
		"not the schema":   {`{ viewer { password } }`, "GRAPHQL_VALIDATION_FAILED"},
		"past a limit":     {`{ viewer { conversations { nodes { lastMessage { seq } } } } }`, "LIMIT_EXCEEDED"},
		"no operation":     {`fragment F on Query { viewer { userID } }`, "GRAPHQL_VALIDATION_FAILED"},
		"unknown fragment": {`{ ...F }`, "GRAPHQL_VALIDATION_FAILED"},
	} {
		out := postPersisted(t, h, token, c.query)
		if graphqltest.ErrorCodes(out) != c.code {
			t.Errorf("%s: answered %v, want %s", name, out, c.code)
		}
	}
	if store.asked != 0 {
		t.Fatalf("queries that failed were registered: %v", store.kept)
	}

	if out := postPersisted(t, h, "", `{ __typename }`); out["errors"] != nil || store.asked != 0 {
		t.Errorf("an anonymous query: %v, registered %d times; want an answer and none", out, store.asked)
	}
	const valid = `{ viewer { userID } }`
	if out := postPersisted(t, h, token, valid); out["errors"] != nil {
		t.Fatalf("a valid query: %v", out)
	}
	if q, _ := store.Get(context.Background(), sha256Hex(valid)); q != valid || store.maxCount != 7 || store.maxBytes != DefaultPersistedQueryBytesPerUser {
		t.Errorf("a valid query registered as %q with bounds %d, %d; want it, 7 and the default bytes", q, store.maxCount, store.maxBytes)
	}

	store.keep = false
	const refused = `{ a: viewer { userID } }`
	if out := postPersisted(t, h, token, refused); out["errors"] != nil {
		t.Errorf("a query the store would not keep failed: %v", out)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
