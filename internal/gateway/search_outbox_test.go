package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/search"
	imsync "github.com/msggate/msggate/internal/sync"
)

// downIndex is a search index that is down: it takes no change.
type downIndex struct{ search.Engine }

func (downIndex) Apply(context.Context, []search.Change) error {
	return fmt.Errorf("test: %w", search.ErrUnavailable)
}

// writerWithIndex is a second writer on g's stores whose changes go to index.
func writerWithIndex(g *gatewaytest.Gateway, index search.Engine) *ingest.Ingester {
	ledger := imsync.NewLedger(g.Store, g.Cache, imsync.Options{IntentHandoff: testHandoff})
	return ingest.New(g.Store, g.Cache, ledger, ingest.Options{Search: index})
}

// Ensure the index ends up showing every change whose writer died before indexing it, or whose
// writer found the index down: the relay indexes it from the outbox, the change itself having
// succeeded; and that while the index is down, search answers UNAVAILABLE and sends go on.
func TestSearchIndexCatchesUpFromTheOutbox(t *testing.T) {
	g := startWithRelay(t)
	alice, bob := g.Token("alice"), g.Token("bob")
	conv, err := im.ParseConversationID("si_alice_bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"outbox one", "outbox two", "outbox three"} {
		g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": text})
	}
	expectFound(t, g, "bob", bob, map[string]any{"q": "outbox"}, "si_alice_bob/3", "si_alice_bob/2", "si_alice_bob/1")

	// A revoke and a send whose writer died right after the store had them.
	if _, err := dyingWriter(g, "store", nil).Revoke(context.Background(), ingest.Actor{UserID: "alice"}, conv, 2, time.Now().UnixMilli()); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("the revoking writer did not stop: %v", err)
	}
	if _, err := dyingWriter(g, "store", nil).Ingest(context.Background(), []*im.Message{{SendID: "bob", RecvID: "alice",
		SessionType: im.SessionSingle, ContentType: 101, Content: "outbox four from a dead writer", ClientMsgID: "c4"}}); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("the sending writer did not stop: %v", err)
	}
	// A send and a delete for me made while the index was down for their writer.
	live := writerWithIndex(g, downIndex{})
	if _, err := live.Ingest(context.Background(), []*im.Message{{SendID: "alice", RecvID: "bob",
		SessionType: im.SessionSingle, ContentType: 101, Content: "outbox five while the index was down", ClientMsgID: "c5"}}); err != nil {
		t.Fatalf("a send failed because the index was down: %v", err)
	}
	if _, err := live.Delete(context.Background(), ingest.Actor{UserID: "bob"}, conv, []int64{1}, false); err != nil {
		t.Fatalf("a delete failed because the index was down: %v", err)
	}
	waitForFinishedIntents(t, g, conv.ID)
	expectFound(t, g, "bob once the relay finished", bob, map[string]any{"q": "outbox"}, "si_alice_bob/5", "si_alice_bob/4", "si_alice_bob/3")
	expectFound(t, g, "alice once the relay finished", alice, map[string]any{"q": "outbox"}, "si_alice_bob/5", "si_alice_bob/4", "si_alice_bob/3", "si_alice_bob/1")

	if err := g.Gateway.Search.Close(); err != nil {
		t.Fatal(err)
	}
	if code := g.ErrorCode(bob, searchQuery, map[string]any{"q": "outbox"}); code != "UNAVAILABLE" {
		t.Errorf("search with the index down: %q, want UNAVAILABLE", code)
	}
	m := g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "sent with the index down"})
	if got := g.Statuses(bob, "si_alice_bob", m.Seq); len(got) != 1 || got[0] != "OK" {
		t.Errorf("a send with the index down reads %v", got)
	}
}
