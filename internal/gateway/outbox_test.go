package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
	imsync "github.com/msggate/msggate/internal/sync"
)

// The writer in these tests hands its change over to the relay this soon, and the relay looks
// this often, so that a dead writer's change is finished within about a second.
const (
	testHandoff       = 300 * time.Millisecond
	testRelayInterval = 100 * time.Millisecond
)

func startWithRelay(t *testing.T) *gatewaytest.Gateway {
	return gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.IntentHandoff, c.RelayInterval = testHandoff, testRelayInterval
		c.Handler.RateLimit = -1
	})
}

// dyingWriter is a second writer on g's stores that stops at step, as if its process died
// there: it leaves its intent, its store writes and whatever else it did as they are. With
// instead set, it calls instead at step and goes on.
func dyingWriter(g *gatewaytest.Gateway, step string, instead func()) *ingest.Ingester {
	ledger := imsync.NewLedger(g.Store, g.Cache, imsync.Options{IntentHandoff: testHandoff, Fault: func(s string) error {
		if s != step {
			return nil
		}
		if instead != nil {
			instead()
			return nil
		}
		return imsync.ErrWriterStopped
	}})
	return ingest.New(g.Store, g.Cache, ledger, ingest.Options{})
}

// syncToken returns the token of user's state summary.
func syncToken(g *gatewaytest.Gateway, user string) string {
	g.T.Helper()
	var st syncStateResult
	g.Query(g.Token(user), syncStateQuery, nil, &st)
	return st.SyncState.Token
}

// eventsSince returns user's events after since (at most 1000).
func eventsSince(g *gatewaytest.Gateway, user, since string) []syncEvent {
	g.T.Helper()
	d := difference(g, g.Token(user), since, 1000)
	if d.SyncDifference.TooLong {
		g.T.Fatalf("%s's log cannot serve %s", user, since)
	}
	return d.SyncDifference.Events
}

// matching counts the events of a kind in a conversation.
func matching(evs []syncEvent, kind, conv string) int {
	n := 0
	for _, e := range evs {
		if string(e.Type) == kind && e.ConversationID != nil && *e.ConversationID == conv {
			n++
		}
	}
	return n
}

func singleChat(t *testing.T, a, b string) string {
	t.Helper()
	id, err := im.SingleConversationID(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitForFinishedIntents waits until the relay has finished every intent in a conversation.
func waitForFinishedIntents(t *testing.T, g *gatewaytest.Gateway, conv string) {
	t.Helper()
	gatewaytest.WaitFor(t, 15*time.Second, "intents are left in the outbox", func() bool {
		due, err := g.Store.DueIntents(context.Background(), time.Now().Add(time.Hour), 1000)
		if err != nil {
			return false
		}
		for _, it := range due {
			if it.ConversationID == conv {
				return false
			}
		}
		return true
	})
}

// asTest returns g as a client whose failures end t (a subtest) rather than g's own test.
func asTest(g *gatewaytest.Gateway, t *testing.T) *gatewaytest.Gateway {
	c := *g
	c.T = t
	return &c
}

// Ensure a message whose writer died at any step after its intent reaches the other member's
// devices exactly once: from the relay alone, or from the relay and the client's retry of the
// send (same client message ID), whichever comes first.
func TestSendIsAnnouncedAfterItsWriterDied(t *testing.T) {
	g := startWithRelay(t)
	for i, step := range []string{"intent", "store", "invalidate", "record", "announce"} {
		for _, retry := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/retry=%v", step, retry), func(t *testing.T) {
				g := asTest(g, t)
				alice, bob := fmt.Sprintf("a%d%v", i, retry), fmt.Sprintf("b%d%v", i, retry)
				conv := singleChat(t, alice, bob)
				since := syncToken(g, bob)
				msg := &im.Message{SendID: alice, RecvID: bob, ContentType: 101, Content: "hello", ClientMsgID: "c-" + step}
				if _, err := dyingWriter(g, step, nil).Ingest(context.Background(), []*im.Message{msg}); !errors.Is(err, imsync.ErrWriterStopped) {
					t.Fatalf("the writer did not stop at %s: %v", step, err)
				}
				if retry {
					m := g.SendGQL(g.Token(alice), map[string]any{"recvID": bob, "contentType": 101, "content": "hello", "clientMsgID": "c-" + step})
					if m.Seq != 1 {
						t.Fatalf("the retried send got seq %d, want the first send's 1", m.Seq)
					}
				}
				if step == "intent" && !retry {
					// Nothing reached the chunks: there is nothing to announce, and nothing
					// may be announced however long the relay looks.
					time.Sleep(3 * testHandoff)
					if evs := eventsSince(g, bob, since); len(evs) != 0 {
						t.Fatalf("a message that was never stored was announced: %+v", evs)
					}
					return
				}
				gatewaytest.WaitFor(t, 10*time.Second, "the message is not announced", func() bool {
					return matching(eventsSince(g, bob, since), "NEW_MESSAGE", conv) > 0
				})
				waitForFinishedIntents(t, g, conv)
				evs := eventsSince(g, bob, since)
				if n := matching(evs, "NEW_MESSAGE", conv); n != 1 || *evs[0].Seq != 1 {
					t.Fatalf("bob's devices got %d NEW_MESSAGE events, want one of seq 1: %+v", n, evs)
				}
				c := g.Conversation(g.Token(bob), conv)
				if c.MaxSeq != 1 || c.UnreadCount != 1 || c.LastMessage == nil || *c.LastMessage.Content != "hello" {
					t.Fatalf("bob reads %+v after the relay finished the send", c)
				}
			})
		}
	}
}

// Ensure a revoke, a delete, a read or a clear whose writer died after the store took it, or
// after its announcement, reaches the devices exactly once; and that repeating the change
// through the gateway meanwhile adds no second event.
func TestChangesAreAnnouncedAfterTheirWriterDied(t *testing.T) {
	g := startWithRelay(t)
	chunks := history.ChunkFunc(g.Store.FindChunks)
	three := int64(3)
	changes := []struct {
		name, kind string
		// who must get the event
		watcher string
		do      func(w *ingest.Ingester, conv im.Conversation, alice string) error
		repeat  string // the same change as a GraphQL mutation
	}{
		{"revoke", "REVOKE", "bob", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.Revoke(context.Background(), ingest.Actor{UserID: alice}, conv, 2, time.Now().UnixMilli())
			return err
		}, `mutation($c: ID!) { revokeMessage(conversationID: $c, seq: 2) { seq } }`},
		{"delete for everyone", "DELETE", "bob", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.Delete(context.Background(), ingest.Actor{UserID: alice}, conv, []int64{2, 3}, true)
			return err
		}, `mutation($c: ID!) { deleteMessages(conversationID: $c, seqs: [2, 3], forEveryone: true) { seq } }`},
		{"delete for me", "DELETE", "alice", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.Delete(context.Background(), ingest.Actor{UserID: alice}, conv, []int64{1}, false)
			return err
		}, `mutation($c: ID!) { deleteMessages(conversationID: $c, seqs: [1]) { seq } }`},
		{"read", "READ", "alice", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.MarkRead(context.Background(), chunks, conv.Peer(alice), conv, &three)
			return err
		}, ``},
		{"clear for me", "CLEAR", "alice", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.Clear(context.Background(), ingest.Actor{UserID: alice}, conv, false)
			return err
		}, `mutation($c: ID!) { clearConversation(conversationID: $c) { maxSeq } }`},
		{"clear for everyone", "CLEAR", "bob", func(w *ingest.Ingester, conv im.Conversation, alice string) error {
			_, err := w.Clear(context.Background(), ingest.Actor{UserID: alice}, conv, true)
			return err
		}, `mutation($c: ID!) { clearConversation(conversationID: $c, forEveryone: true) { maxSeq } }`},
	}
	for i, ch := range changes {
		for _, step := range []string{"store", "announce"} {
			t.Run(ch.name+"/"+step, func(t *testing.T) {
				g := asTest(g, t)
				alice, bob := fmt.Sprintf("x%d%s", i, step), fmt.Sprintf("y%d%s", i, step)
				for j := 0; j < 3; j++ {
					g.SendGQL(g.Token(alice), map[string]any{"recvID": bob, "contentType": 101, "content": "m"})
				}
				conv, err := im.ParseConversationID(singleChat(t, alice, bob))
				if err != nil {
					t.Fatal(err)
				}
				watcher := map[string]string{"alice": alice, "bob": bob}[ch.watcher]
				reader := alice
				if ch.kind == "READ" {
					watcher, reader = bob, bob // bob reads; his other devices learn it
				}
				since := syncToken(g, watcher)
				if err := ch.do(dyingWriter(g, step, nil), conv, alice); !errors.Is(err, imsync.ErrWriterStopped) {
					t.Fatalf("the writer did not stop at %s: %v", step, err)
				}
				if ch.repeat != "" {
					g.Query(g.Token(reader), ch.repeat, map[string]any{"c": conv.ID}, &map[string]any{})
				} else {
					g.Query(g.Token(reader), `mutation($c: ID!) { markConversationRead(conversationID: $c, readSeq: 3) { readSeq } }`, map[string]any{"c": conv.ID}, &map[string]any{})
				}
				gatewaytest.WaitFor(t, 10*time.Second, "the change is not announced", func() bool {
					return matching(eventsSince(g, watcher, since), ch.kind, conv.ID) > 0
				})
				waitForFinishedIntents(t, g, conv.ID)
				if evs := eventsSince(g, watcher, since); matching(evs, ch.kind, conv.ID) != 1 {
					t.Fatalf("%s's devices got the change %d times: %+v", watcher, matching(evs, ch.kind, conv.ID), evs)
				}
			})
		}
	}
}

// Ensure a change whose announcement failed because Redis was down at that moment reaches the
// devices once Redis is back, without anyone retrying: a send stopped before its chunks were
// invalidated (so not even its max seq is recorded) and a revoke stopped before its
// announcement.
func TestChangesMadeWhileRedisWasDownAreAnnounced(t *testing.T) {
	g := startWithRelay(t)
	alice := g.Token("alice")
	g.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "first"})

	send := dyingWriter(g, "store", g.Redis.Stop)
	msg := &im.Message{SendID: "alice", RecvID: "bob", ContentType: 101, Content: "second", ClientMsgID: "second"}
	if _, err := send.Ingest(context.Background(), []*im.Message{msg}); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Fatalf("a send whose Redis died under it answered %v, want UNAVAILABLE", err)
	}
	g.Redis.Start()
	waitForFinishedIntents(t, g, "si_alice_bob")
	c := g.Conversation(g.Token("bob"), "si_alice_bob")
	if c.MaxSeq != 2 || c.LastMessage == nil || *c.LastMessage.Content != "second" {
		t.Fatalf("after Redis came back bob reads %+v, want the second message at seq 2", c)
	}
	// Redis lost the log with its keys: the new log, from its start, holds the message once.
	tok := syncToken(g, "bob")
	epoch := tok[:strings.LastIndexByte(tok, '.')]
	if evs := eventsSince(g, "bob", epoch+".0"); matching(evs, "NEW_MESSAGE", "si_alice_bob") != 1 || *evs[0].Seq != 2 {
		t.Fatalf("bob's new log holds %+v, want the second message once", evs)
	}

	conv, _ := im.ParseConversationID("si_alice_bob")
	revoke := dyingWriter(g, "store", g.Redis.Stop)
	if _, err := revoke.Revoke(context.Background(), ingest.Actor{UserID: "alice"}, conv, 1, time.Now().UnixMilli()); im.ErrorCode(err) != im.EUNAVAILABLE {
		t.Fatalf("a revoke whose Redis died under it answered %v, want UNAVAILABLE", err)
	}
	g.Redis.Start()
	waitForFinishedIntents(t, g, "si_alice_bob")
	tok = syncToken(g, "bob")
	epoch = tok[:strings.LastIndexByte(tok, '.')]
	if evs := eventsSince(g, "bob", epoch+".0"); matching(evs, "REVOKE", "si_alice_bob") != 1 {
		t.Fatalf("bob's new log holds %+v, want the revoke once", evs)
	}
	if got := g.Statuses(g.Token("bob"), "si_alice_bob", 1); got[0] != "REVOKED" {
		t.Fatalf("seq 1 reads %v after the relay, want REVOKED", got)
	}
}

// Ensure a relay leaves alone the intent of a writer whose instance is alive, however long it
// takes (taking it over would only add load to a busy store), and takes it once that instance
// stops saying it is alive.
func TestRelayLeavesALiveInstancesIntentsAlone(t *testing.T) {
	g := startWithRelay(t)
	alive, die := context.WithCancel(context.Background())
	defer die()
	ledger := imsync.NewLedger(g.Store, g.Cache, imsync.Options{IntentHandoff: testHandoff, Fault: func(s string) error {
		if s == "store" {
			return imsync.ErrWriterStopped
		}
		return nil
	}})
	go ledger.Outbox().Heartbeat(alive)
	writer := ingest.New(g.Store, g.Cache, ledger, ingest.Options{})
	since := syncToken(g, "bob")
	msg := &im.Message{SendID: "alice", RecvID: "bob", ContentType: 101, Content: "slow", ClientMsgID: "slow"}
	if _, err := writer.Ingest(context.Background(), []*im.Message{msg}); !errors.Is(err, imsync.ErrWriterStopped) {
		t.Fatalf("the writer did not stop: %v", err)
	}
	time.Sleep(10 * testHandoff)
	if evs := eventsSince(g, "bob", since); len(evs) != 0 {
		t.Fatalf("another instance's relay announced a live instance's change: %+v", evs)
	}
	die()
	start := time.Now()
	gatewaytest.WaitFor(t, imsync.InstanceTTL+10*time.Second, "the dead instance's change is not announced", func() bool {
		return matching(eventsSince(g, "bob", since), "NEW_MESSAGE", "si_alice_bob") == 1
	})
	t.Logf("announced %v after the instance died", time.Since(start).Round(10*time.Millisecond))
}
