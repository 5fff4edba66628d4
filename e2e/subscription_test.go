package e2e

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// nodeLine is one line subscribe.mjs prints.
type nodeLine struct {
	Type  string `json:"type"`
	Event *struct {
		Type           string `json:"type"`
		Position       int64  `json:"position"`
		ConversationID string `json:"conversationID"`
		Seq            int64  `json:"seq"`
		SendID         string `json:"sendID"`
		UnreadCount    int64  `json:"unreadCount"`
	} `json:"event"`
	ElapsedMs *float64 `json:"elapsedMs"`
	Error     string   `json:"error"`
}

// nextNodeLine returns the script's next line, failing the test if it ends or says nothing
// for a long while.
func nextNodeLine(t *testing.T, lines <-chan string) nodeLine {
	t.Helper()
	select {
	case s, ok := <-lines:
		if !ok {
			t.Fatal("the Node script ended early")
		}
		var l nodeLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("the Node script printed %q", s)
		}
		if l.Type == "error" {
			t.Fatalf("the Node client failed: %s", l.Error)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("the Node script said nothing for 30 s")
	}
	return nodeLine{}
}

// Ensure a real client, the npm graphql-ws client in Node, subscribed through one instance
// receives within one second a message sent through the other instance. The clock starts
// in Node when the test tells it the send is about to happen, and stops when the event is in.
func TestSubscriptionNodeClient(t *testing.T) {
	gws := gatewaytest.StartPair(t, nil)
	alice, bob := gws[0].Token("alice"), gws[1].Token("bob")
	var st struct{ SyncState struct{ Token string } }
	gws[0].Query(alice, `{ syncState(first: 1) { token } }`, nil, &st)

	stdin, lines := startNodeScript(t, "subscribe.mjs", strings.Replace(gws[0].URL, "http", "ws", 1)+"/query", alice, st.SyncState.Token)
	if l := nextNodeLine(t, lines); l.Type != "connected" {
		t.Fatalf("first line %+v, want connected", l)
	}
	// The subscription is live on instance 1 once its hub holds it: only then is the send a
	// test of live delivery rather than of replay.
	gatewaytest.WaitFor(t, 30*time.Second, "the Node client's subscription never reached the hub", func() bool { return gws[0].Hub.Subscribers() > 0 })
	if _, err := io.WriteString(stdin, "send\n"); err != nil {
		t.Fatal(err)
	}
	if l := nextNodeLine(t, lines); l.Type != "armed" {
		t.Fatalf("after the signal: %+v, want armed", l)
	}
	sent := time.Now()
	m := gws[1].SendGQL(bob, map[string]any{"recvID": "alice", "contentType": 101, "content": "through the other instance"})
	sendTook := time.Since(sent)
	for {
		l := nextNodeLine(t, lines)
		if l.Type != "event" || l.Event == nil || l.Event.Type != "NEW_MESSAGE" {
			continue
		}
		if l.Event.ConversationID != "si_alice_bob" || l.Event.Seq != m.Seq || l.Event.SendID != "bob" || l.Event.UnreadCount != 1 {
			t.Fatalf("event %+v, want alice's NEW_MESSAGE for seq %d from bob with 1 unread", *l.Event, m.Seq)
		}
		if l.ElapsedMs == nil {
			t.Fatal("the event carries no elapsed time")
		}
		t.Logf("delivered to Node %.1f ms after the signal (the send's request took %v)", *l.ElapsedMs, sendTook.Round(time.Millisecond))
		if *l.ElapsedMs >= 1000 {
			t.Errorf("delivered %.1f ms after the send started, want under 1000 ms", *l.ElapsedMs)
		}
		return
	}
}
