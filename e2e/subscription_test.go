package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// nodeLine is one line tools/e2e/subscribe.mjs prints.
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
	gws := startGatewayPair(t, nil)
	alice, bob := gws[0].token("alice"), gws[1].token("bob")
	var st struct{ SyncState struct{ Token string } }
	gws[0].query(alice, `{ syncState(first: 1) { token } }`, nil, &st)

	stdin, lines := startNodeScript(t, "subscribe.mjs", strings.Replace(gws[0].url, "http", "ws", 1)+"/query", alice, st.SyncState.Token)
	if l := nextNodeLine(t, lines); l.Type != "connected" {
		t.Fatalf("first line %+v, want connected", l)
	}
	// The subscription is live on instance 1 once its hub holds it: only then is the send a
	// test of live delivery rather than of replay.
	deadline := time.Now().Add(30 * time.Second)
	for gws[0].m.Hub.Subscribers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the Node client's subscription never reached the hub")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := io.WriteString(stdin, "send\n"); err != nil {
		t.Fatal(err)
	}
	if l := nextNodeLine(t, lines); l.Type != "armed" {
		t.Fatalf("after the signal: %+v, want armed", l)
	}
	sent := time.Now()
	m := gws[1].sendGQL(bob, map[string]any{"recvID": "alice", "contentType": 101, "content": "through the other instance"})
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

// Ensure the legacy graphql-ws protocol (connection_init, start, data) works too, with the
// token given as {"authToken": ...}: an event sent through the other instance arrives.
func TestSubscriptionLegacyProtocol(t *testing.T) {
	gws := startGatewayPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(gws[0].url, "http", "ws", 1)+"/query",
		&websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.CloseNow() }()
	if conn.Subprotocol() != "graphql-ws" {
		t.Fatalf("subprotocol %q, want graphql-ws", conn.Subprotocol())
	}
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]any {
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m["type"] != "ka" {
				return m
			}
		}
	}
	write(map[string]any{"type": "connection_init", "payload": map[string]any{"authToken": gws[0].token("carol")}})
	if m := read(); m["type"] != "connection_ack" {
		t.Fatalf("after connection_init: %v", m)
	}
	write(map[string]any{"id": "1", "type": "start", "payload": map[string]any{
		"query": `subscription { syncEvents { type conversationID seq sendID unreadCount } }`}})
	deadline := time.Now().Add(20 * time.Second)
	for gws[0].m.Hub.Subscribers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never reached the hub")
		}
		time.Sleep(5 * time.Millisecond)
	}
	gws[1].sendGQL(gws[1].token("dave"), map[string]any{"recvID": "carol", "contentType": 101, "content": "legacy"})
	m := read()
	if m["type"] != "data" || m["id"] != "1" {
		t.Fatalf("got %v, want a data message for id 1", m)
	}
	b, _ := json.Marshal(m["payload"])
	var p struct {
		Data struct {
			SyncEvents struct {
				Type           string
				ConversationID string
				Seq            int64
				SendID         string
				UnreadCount    int64
			}
		}
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if ev := p.Data.SyncEvents; ev.Type != "NEW_MESSAGE" || ev.ConversationID != "si_carol_dave" || ev.Seq != 1 || ev.SendID != "dave" || ev.UnreadCount != 1 {
		t.Fatalf("event %+v", ev)
	}
	write(map[string]any{"id": "1", "type": "stop"})
	if m := read(); m["type"] != "complete" {
		t.Fatalf("after stop: %v", m)
	}
}
