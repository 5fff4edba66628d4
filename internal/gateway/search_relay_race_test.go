package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	"github.com/msggate/msggate/internal/search"
	imsync "github.com/msggate/msggate/internal/sync"
)

// Ensure a send intent the relay finishes late, from slots it read before the message was
// revoked, does not put the revoked message back in the index after the revoke removed it:
// search would count it (its hit is dropped when rendered, its count is not).
func TestRelayFinishingASendRacingARevokeLeavesItOut(t *testing.T) {
	onEachSearchEngine(t, testRelayFinishingASendRacingARevoke)
}

func testRelayFinishingASendRacingARevoke(t *testing.T, g *gatewaytest.Gateway) {
	ctx := context.Background()
	alice := g.Token("alice")
	const conv = "si_alice_bob"
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "racing one"})

	// The second send's writer finds the index down: the message is stored, visible and
	// announced, and its intent stays for the relay. The hour's handoff keeps the gateway's
	// own relay away from it: this test finishes it.
	ledger := imsync.NewLedger(g.Store, g.Cache, imsync.Options{IntentHandoff: time.Hour})
	if _, err := ingest.New(g.Store, g.Cache, ledger, ingest.Options{Search: downIndex{}}).Ingest(ctx, []*im.Message{{SendID: "alice",
		RecvID: "bob", SessionType: im.SessionSingle, ContentType: 101, Content: "racing two", ClientMsgID: "race2"}}); err != nil {
		t.Fatal(err)
	}
	// What a relay read for its batch before the revoke below.
	before, err := g.Store.FindChunks(ctx, []string{im.DocID(conv, 2)})
	if err != nil {
		t.Fatal(err)
	}
	stale := history.ChunkFunc(func(context.Context, []string) ([]*im.Chunk, error) { return before, nil })
	g.Query(alice, `mutation { revokeMessage(conversationID: "si_alice_bob", seq: 2) { seq } }`, nil, &struct{}{})

	due, err := g.Store.DueIntents(ctx, time.Now().Add(2*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var send *chunkstore.Intent
	for i := range due {
		if due[i].Kind == chunkstore.IntentSend && due[i].ConversationID == conv {
			send = &due[i]
		}
	}
	if send == nil {
		t.Fatalf("the send's intent is not in the outbox: %+v", due)
	}
	relay := ingest.New(g.Store, g.Cache, imsync.NewLedger(g.Store, g.Cache, imsync.Options{}), ingest.Options{Search: g.Search})
	if out, err := relay.FinishIntent(ctx, stale, *send); err != nil || out != imsync.IntentDone {
		t.Fatalf("finishing the send's intent: %v, %v", out, err)
	}

	res, err := g.Search.Search(ctx, search.Request{Viewer: "bob", Text: "racing", Scopes: []search.Scope{{ConversationID: conv}}, First: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 1 || len(res.Hits) != 1 || res.Hits[0].Key.Seq != 1 {
		t.Errorf("after the send's intent was finished from slots read before its revoke, bob finds %d (%+v), want seq 1 only", res.Count, res.Hits)
	}
}
