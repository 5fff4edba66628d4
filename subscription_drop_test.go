//go:build knownbugs

package main

// Failing tests for two faults in how the gateway drops subscribers (graph/websocket.go and
// internal/sync/subscription.go, the lead's code), kept out of the default run so the suite
// stays green until they are fixed:
//
//	go test -race -tags knownbugs -run 'TestSubscriptionBurst|TestSubscriptionDrop' .
//
// Remove the build tag with the fix.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// readUntilEnd reads a subscriber's messages until want events arrived or the connection
// ended, and returns how many events came, the other messages, and the end.
func readUntilEnd(ctx context.Context, s *rawSubscriber, want int) (events int, others []string, end error) {
	for events < want {
		m, err := s.read(ctx)
		if err != nil {
			return events, others, err
		}
		if _, perr := eventPosition(m); perr == nil {
			events++
		} else {
			others = append(others, fmt.Sprint(m))
		}
	}
	return events, others, nil
}

// Ensure a subscriber that reads as fast as it can is not dropped as a slow consumer because
// one change produced more events at once than the hub buffers (HubOptions.Buffer, 1024): the
// log holds them all, so the subscription can catch up from it instead.
//
// Today the hub's deliver drops the subscriber as soon as its buffer is full, whatever the
// reason; a burst of 2000 events (one AppendEvents call, as an import or a large
// AnnounceMessages makes) ends every live subscription of the user after a few hundred events.
func TestSubscriptionBurstDoesNotDropAReader(t *testing.T) {
	g := startGateway(t)
	flood := noteToSelf(t, g, "hal")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := dialRaw(t, g, "hal", false)
	defer func() { _ = s.conn.CloseNow() }()
	waitFor(t, 20*time.Second, "the subscription reaches the hub", func() bool { return g.m.Hub.Subscribers() == 1 })
	flood(2000) // one append of 2000 events
	n, _, err := readUntilEnd(ctx, s, 2000)
	if err != nil {
		t.Fatalf("a subscriber reading as fast as it can got %d of 2000 events, then: %v", n, err)
	}
}

// Ensure a dropped subscriber learns of the drop from the close (4008 "slow consumer ...")
// and is not first told that its subscription completed: graphql-transport-ws clients (the
// npm graphql-ws client among them) take "complete" for a normal end, report it to the
// application, and do not resubscribe, so the application silently stops receiving events.
//
// Today syncEvents (graph/websocket.go) starts the close in the background and then returns,
// closing its channel; gqlgen then writes "complete" for the operation, and which of the two
// reaches the socket first is a race. Holding the channel open until the connection is closed
// (waiting for the operation's context after closeConnection) would make the close come alone.
func TestSubscriptionDropSendsNoComplete(t *testing.T) {
	g := startGateway(t)
	flood := noteToSelf(t, g, "ida")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	drops := 0
	for round := 0; round < 10; round++ {
		s := dialRaw(t, g, "ida", false)
		waitFor(t, 20*time.Second, "the subscription reaches the hub", func() bool { return g.m.Hub.Subscribers() == 1 })
		flood(2000) // enough to overflow the hub's buffer (see the test above)
		n, others, err := readUntilEnd(ctx, s, 2000)
		_ = s.conn.CloseNow()
		waitFor(t, 20*time.Second, "the subscription leaves the hub", func() bool { return g.m.Hub.Subscribers() == 0 })
		if err == nil {
			continue // not dropped this time
		}
		drops++
		if websocket.CloseStatus(err) != 4008 {
			t.Errorf("round %d: dropped after %d events with %v, want close 4008", round, n, err)
		}
		for _, m := range others {
			if strings.Contains(m, "complete") {
				t.Errorf("round %d: after %d events the dropped subscriber was sent %s before the close", round, n, m)
			}
		}
	}
	if drops == 0 {
		// Once bursts no longer drop readers (the test above), drop a subscriber another way.
		t.Fatal("no subscriber was dropped, so nothing was checked")
	}
}
