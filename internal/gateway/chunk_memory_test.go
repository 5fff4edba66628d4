package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/retention"
)

const coherencePageQuery = `query($c: ID!) { conversation(id: $c) { maxSeq minSeq readSeq unreadCount
	history(limit: 50) { messages { seq status isRead content revoke { userID } } } } }`

// pageOf is the viewer's page of si_alice_bob through g, as JSON.
func pageOf(t *testing.T, g *gatewaytest.Gateway, token string) string {
	t.Helper()
	var out json.RawMessage
	g.Query(token, coherencePageQuery, map[string]any{"c": "si_alice_bob"}, &out)
	return string(out)
}

// Ensure two instances that keep chunks in memory never serve a copy older than a change the
// other acknowledged: for every kind of change made on one instance, the other's very next
// read, its memory warm before the change, answers what an instance without memory answers.
// Then the same after Redis lost everything (a restart): reads go through until the state
// carries a version again, and a change after the restart is seen at once.
func TestChunkMemoryCoherence(t *testing.T) {
	pair := gatewaytest.StartPair(t, nil)
	cfg := pair[0].Config
	cfg.ChunkMemory = -1
	reference := gatewaytest.New(t, cfg) // reads through every time: what is current
	reference.Redis = pair[0].Redis
	alice, bob := pair[0].Token("alice"), pair[0].Token("bob")
	ctx := context.Background()
	pair[0].Send("alice", "bob", "", 8)
	pair[0].Send("bob", "alice", "", 2)

	step := 0
	check := func(what string, change func(w *gatewaytest.Gateway)) {
		t.Helper()
		step++
		writer, reader := pair[step%2], pair[(step+1)%2]
		// Warm the reader: its second read of each page is served from its memory.
		hits := reader.ChunkMemory.Stats().Hits
		var before [2]string
		for i, tok := range []string{alice, bob} {
			pageOf(t, reader, tok)
			before[i] = pageOf(t, reader, tok)
		}
		if reader.ChunkMemory.Stats().Hits <= hits {
			t.Fatalf("%s: the reader's warm reads were not served from its memory", what)
		}
		change(writer)
		for i, tok := range []string{alice, bob} {
			got, want := pageOf(t, reader, tok), pageOf(t, reference, tok)
			if got != want {
				t.Errorf("%s on instance %d, read by %s on the other:\n got %s\nwant %s", what, step%2, []string{"alice", "bob"}[i], got, want)
			}
			if i == 1 && got == before[i] {
				t.Errorf("%s: bob's page did not change, so the check proves nothing: %s", what, got)
			}
		}
	}
	post := func(w *gatewaytest.Gateway, token, query string, vars map[string]any) {
		t.Helper()
		if r := w.Post(token, query, vars); len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", query, r.Errors)
		}
	}

	check("send", func(w *gatewaytest.Gateway) {
		w.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "new"})
	})
	check("revoke", func(w *gatewaytest.Gateway) {
		post(w, alice, revokeMutation, map[string]any{"c": "si_alice_bob", "s": 2})
	})
	check("delete for me", func(w *gatewaytest.Gateway) {
		post(w, bob, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{3}, "all": false})
	})
	check("delete for everyone", func(w *gatewaytest.Gateway) {
		post(w, alice, deleteMutation, map[string]any{"c": "si_alice_bob", "s": []int64{4}, "all": true})
	})
	check("mark read", func(w *gatewaytest.Gateway) {
		post(w, bob, `mutation { markConversationRead(conversationID: "si_alice_bob") { readSeq } }`, nil)
	})
	check("clear for me", func(w *gatewaytest.Gateway) {
		post(w, bob, clearMutation, map[string]any{"c": "si_alice_bob", "all": false})
	})
	pair[0].Send("alice", "bob", "", 3)
	check("clear for everyone", func(w *gatewaytest.Gateway) {
		post(w, alice, clearMutation, map[string]any{"c": "si_alice_bob", "all": true})
	})
	pair[1].Send("alice", "bob", "", 3)
	check("retention", func(w *gatewaytest.Gateway) {
		job := retention.New(w.Store, w.Cache, w.Ledger, retention.Options{MaxAge: 24 * time.Hour,
			Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
		if _, err := job.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	})
	pair[0].Send("alice", "bob", "", 3)
	check("send after retention", func(w *gatewaytest.Gateway) { w.Send("bob", "alice", "", 1) })

	t.Run("after Redis lost its keys", func(t *testing.T) {
		reader, writer := pair[1], pair[0]
		pageOf(t, reader, bob)
		pageOf(t, reader, bob) // warm: served from memory
		pair[0].Redis.Stop()   // it keeps nothing on disk: every key is gone
		if err := pair[0].Redis.Restart(); err != nil {
			t.Fatal(err)
		}
		// No version in Redis: the state is read from MongoDB and the chunks through, never
		// from the memory filled before the restart.
		hits := reader.ChunkMemory.Stats().Hits
		for range 2 {
			if got, want := pageOf(t, reader, bob), pageOf(t, reference, bob); got != want {
				t.Errorf("after the restart:\n got %s\nwant %s", got, want)
			}
		}
		if h := reader.ChunkMemory.Stats().Hits; h != hits {
			t.Errorf("the reader served %d reads from memory without a version to check", h-hits)
		}
		writer.SendGQL(alice, map[string]any{"recvID": "bob", "contentType": 101, "content": "after the restart"})
		if got, want := pageOf(t, reader, bob), pageOf(t, reference, bob); got != want {
			t.Errorf("a send after the restart, read on the other instance:\n got %s\nwant %s", got, want)
		}
	})
}

// Ensure the memory is bounded in bytes and evicts the least recently used chunks, and that
// -chunk-memory negative switches it off.
func TestChunkMemoryBound(t *testing.T) {
	const bound = 100 << 10
	g := gatewaytest.StartWith(t, func(c *gateway.Config) { c.ChunkMemory = bound })
	for _, peer := range []string{"p1", "p2", "p3", "p4"} {
		g.Send(peer, "alice", "", 100) // one full chunk each: about 42 KB decoded
	}
	alice := g.Token("alice")
	for _, peer := range []string{"p1", "p2", "p3", "p4"} {
		var out json.RawMessage
		g.Query(alice, coherencePageQuery, map[string]any{"c": fmt.Sprintf("si_alice_%s", peer)}, &out)
	}
	s := g.ChunkMemory.Stats()
	if s.Bytes > bound || s.Chunks != 2 || s.Evictions != 2 {
		t.Errorf("memory after four chunks with room for two: %+v", s)
	}
	// The two read last are the ones kept: reading them again is served from memory.
	hits := s.Hits
	for _, peer := range []string{"p3", "p4"} {
		var out json.RawMessage
		g.Query(alice, coherencePageQuery, map[string]any{"c": fmt.Sprintf("si_alice_%s", peer)}, &out)
	}
	if s := g.ChunkMemory.Stats(); s.Hits != hits+2 {
		t.Errorf("the two most recent chunks were not kept: %+v", s)
	}
	off := gatewaytest.StartWith(t, func(c *gateway.Config) { c.ChunkMemory = -1 })
	if off.ChunkMemory != nil {
		t.Error("-chunk-memory -1 left the memory on")
	}
}
