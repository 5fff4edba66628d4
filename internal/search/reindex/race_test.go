package reindex_test

import (
	"context"
	"sync"
	"testing"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search"
	"github.com/msggate/msggate/internal/search/reindex"
)

// revokingStore is a real store whose first chunk read, once it has read the chunks, lets
// revoke run before it returns them: a revoke that lands between a reindex's read of a slot
// and its write of it, every time.
type revokingStore struct {
	*chunkstore.Store
	once   sync.Once
	revoke func()
}

func (s *revokingStore) FindChunkRange(ctx context.Context, conversationID string, from, to int64) ([]*im.Chunk, error) {
	chunks, err := s.Store.FindChunkRange(ctx, conversationID, from, to)
	if err == nil {
		s.once.Do(s.revoke)
	}
	return chunks, err
}

// Ensure a revoke made while a reindex has its message read but not yet written leaves the
// message out of the index: neither a hit nor counted.
func TestReindexRacingARevokeLeavesItOut(t *testing.T) {
	t.Run("bleve", func(t *testing.T) { testReindexRacingARevoke(t, gatewaytest.Start(t)) })
	t.Run("postgres", func(t *testing.T) {
		url := testenv.Postgres(t).URL()
		testReindexRacingARevoke(t, gatewaytest.StartWith(t, func(c *gateway.Config) { c.SearchPostgres = url }))
	})
}

func testReindexRacingARevoke(t *testing.T, g *gatewaytest.Gateway) {
	alice := g.Token("alice")
	for _, text := range []string{"racing one", "racing two", "racing three"} {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": text})
	}
	const conv = "si_alice_bob"
	count := func() int {
		t.Helper()
		res, err := g.Search.Search(t.Context(), search.Request{Viewer: "bob", Text: "racing",
			Scopes: []search.Scope{{ConversationID: conv}}, First: 10})
		if err != nil {
			t.Fatal(err)
		}
		if res.Count != len(res.Hits) {
			t.Errorf("count %d for %d hits", res.Count, len(res.Hits))
		}
		return res.Count
	}
	if n := count(); n != 3 {
		t.Fatalf("before the reindex bob finds %d, want the 3 sent", n)
	}

	st := &revokingStore{Store: g.Store, revoke: func() {
		g.Query(alice, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 2) { seq } }`, nil, &struct{}{})
	}}
	if _, err := reindex.Run(t.Context(), st, g.Search, reindex.Options{}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("after a reindex that raced the revoke of seq 2 bob finds %d, want 2", n)
	}
}
