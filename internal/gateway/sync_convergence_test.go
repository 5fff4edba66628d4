package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	imsync "github.com/msggate/msggate/internal/sync"
	"github.com/msggate/msggate/syncclient"
)

// serverReplica reads a user's state fresh from the gateway, as a replica that is exactly up
// to date would hold it: every conversation's counters from syncState and every seq from
// minSeq to maxSeq from messages(...).
func serverReplica(t *testing.T, g *gatewaytest.Gateway, token string) syncclient.Replica {
	t.Helper()
	counters, total, head := serverCounters(t, g, token)
	out := syncclient.Replica{Token: head, TotalUnread: total, Conversations: map[string]syncclient.Conversation{}}
	for id, c := range counters {
		conv := syncclient.Conversation{ID: id, Messages: map[int64]syncclient.Message{}, Counters: c}
		for lo := max(c.MinSeq, 1); lo <= c.MaxSeq; lo += 1000 {
			var seqs []int64
			for s := lo; s <= min(c.MaxSeq, lo+999); s++ {
				seqs = append(seqs, s)
			}
			var m struct{ Messages []gatewaytest.Message }
			g.Query(token, gatewaytest.MessagesQuery, map[string]any{"c": id, "s": seqs}, &m)
			for _, msg := range m.Messages {
				sm := syncclient.Message{Seq: msg.Seq, Status: syncclient.Status(msg.Status)}
				if msg.SendID != nil {
					sm.SendID = *msg.SendID
				}
				if msg.Content != nil && msg.Status == "OK" {
					sm.Content = *msg.Content
				}
				conv.Messages[msg.Seq] = sm
			}
		}
		out.Conversations[id] = conv
	}
	return out
}

// device is one sync client of a user, running (or not) against one instance.
type device struct {
	name   string
	user   string
	client *syncclient.Client
	cancel context.CancelFunc
	done   chan error
}

func (d *device) start() {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan error, 1)
	go func() { d.done <- d.client.Run(ctx) }()
}

// stop ends Run and returns its error.
func (d *device) stop() error {
	if d.cancel == nil {
		return nil
	}
	d.cancel()
	err := <-d.done
	d.cancel = nil
	return err
}

func (d *device) running() bool { return d.cancel != nil }

// syncRun reads the convergence test's size from the environment: MSGGATE_SYNC_SEED (a number,
// or "random") and MSGGATE_SYNC_STEPS.
func syncRun(t *testing.T) (seed int64, steps int) {
	seed, steps = 1, 150
	switch v := os.Getenv("MSGGATE_SYNC_SEED"); v {
	case "":
	case "random":
		seed = time.Now().UnixNano()
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("MSGGATE_SYNC_SEED=%q: a number or \"random\"", v)
		}
		seed = n
	}
	if v := os.Getenv("MSGGATE_SYNC_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("MSGGATE_SYNC_STEPS=%q: a positive number", v)
		}
		steps = n
	}
	return seed, steps
}

// sentMessage is one message the test sent, as the model of who may act on it.
type sentMessage struct {
	seq    int64
	sender string
}

// Ensure every device converges on the server's state whatever happens meanwhile: three
// devices of alice and one each of bob and carol, on two gateway instances, while a seeded
// random sequence of sends (single chats and a group, some of them concurrent), mark-reads,
// revokes, deletes, clears, disconnects, instances going away and one Redis FLUSHALL runs.
// The invariants hold on every event every device applies; afterwards each device's replica
// equals the server's state read fresh: once caught up live, and again after a final Sync.
func TestSyncConvergence(t *testing.T) {
	seed, steps := syncRun(t)
	t.Logf("seed %d, %d steps (MSGGATE_SYNC_SEED=%d MSGGATE_SYNC_STEPS=%d to repeat)", seed, steps, seed, steps)
	rng := rand.New(rand.NewSource(seed))
	gws := gatewaytest.StartPair(t, nil)
	users := []string{"alice", "bob", "carol"}
	tokens := map[string]string{}
	for _, u := range users {
		tokens[u] = gws[0].Token(u)
	}
	gws[0].Query(gws[0].Admin(), groupMutation, map[string]any{"g": "trio", "m": []map[string]any{
		{"userID": "alice", "role": "OWNER"}, {"userID": "bob"}, {"userID": "carol"}}}, &struct{}{})
	convs := []struct {
		id      string
		members []string
		group   bool
	}{
		{"si_alice_bob", []string{"alice", "bob"}, false},
		{"si_alice_carol", []string{"alice", "carol"}, false},
		{"si_bob_carol", []string{"bob", "carol"}, false},
		{"sg_trio", users, true},
	}

	var applied atomic.Int64
	var violations atomic.Int64
	newDevice := func(name, user string, g *gatewaytest.Gateway) *device {
		c, err := syncclient.New(g.URL, tokens[user], syncclient.Options{
			FullHistory:  true,
			ReconnectMin: 10 * time.Millisecond,
			ReconnectMax: 200 * time.Millisecond,
			OnApply: func(a syncclient.Applied) {
				applied.Add(1)
				if err := syncclient.CheckInvariants(a); err != nil && violations.Add(1) <= 20 {
					t.Errorf("%s: %v", name, err)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return &device{name: name, user: user, client: c}
	}
	devices := []*device{
		newDevice("alice-phone", "alice", gws[0]),
		newDevice("alice-laptop", "alice", gws[1]),
		newDevice("alice-tab", "alice", gws[1]),
		newDevice("bob", "bob", gws[0]),
		newDevice("carol", "carol", gws[1]),
	}
	for _, d := range devices {
		d.start()
	}
	defer func() {
		for _, d := range devices {
			_ = d.stop()
		}
	}()

	sent := map[string][]sentMessage{}
	var sentMu sync.Mutex
	maxSeq := func(conv string) int64 {
		sentMu.Lock()
		defer sentMu.Unlock()
		var m int64
		for _, s := range sent[conv] {
			m = max(m, s.seq)
		}
		return m
	}
	// act runs one mutation as user on a random instance; codes lists the error codes that are
	// a legitimate outcome (acting on a message that is gone, say).
	act := func(user, query string, vars map[string]any, codes ...string) gatewaytest.Response {
		g := gws[rng.Intn(2)]
		_, r, err := gatewaytest.Call(g.URL, tokens[user], "", query, vars)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		for _, e := range r.Errors {
			code, _ := e.Extensions["code"].(string)
			ok := false
			for _, c := range codes {
				ok = ok || c == code
			}
			if !ok {
				t.Fatalf("%s %s %v: %s (%s)", user, strings.Fields(query)[1], vars, e.Message, code)
			}
		}
		return r
	}
	send := func(g *gatewaytest.Gateway, user string, conv int, text string) error {
		in := map[string]any{"contentType": 101, "content": text}
		if c := convs[conv]; c.group {
			in["groupID"] = "trio"
		} else {
			for _, m := range c.members {
				if m != user {
					in["recvID"] = m
				}
			}
		}
		_, r, err := gatewaytest.Call(g.URL, tokens[user], "", gatewaytest.SendMutation, map[string]any{"in": in})
		if err != nil {
			return err
		}
		if len(r.Errors) > 0 {
			return fmt.Errorf("send: %s", r.Errors[0].Message)
		}
		var out struct{ SendMessage gatewaytest.Message }
		if err := json.Unmarshal(r.Data, &out); err != nil {
			return err
		}
		sentMu.Lock()
		sent[convs[conv].id] = append(sent[convs[conv].id], sentMessage{seq: out.SendMessage.Seq, sender: user})
		sentMu.Unlock()
		return nil
	}
	pick := func(list []string) string { return list[rng.Intn(len(list))] }

	counts := map[string]int{}
	started := time.Now()
	for step := 0; step < steps; step++ {
		if step == steps/2 {
			if err := gws[0].Redis.FlushAll(); err != nil {
				t.Fatal(err)
			}
			counts["flushall"]++
			continue
		}
		ci := rng.Intn(len(convs))
		conv := convs[ci]
		user := pick(conv.members)
		switch r := rng.Intn(100); {
		case r < 35:
			counts["send"]++
			if err := send(gws[rng.Intn(2)], user, ci, fmt.Sprintf("step %d from %s", step, user)); err != nil {
				t.Fatal(err)
			}
		case r < 42:
			// Concurrent sends through both instances: seqs are announced out of order.
			counts["concurrent sends"]++
			n := 2 + rng.Intn(3)
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				g, u := gws[i%2], pick(conv.members)
				go func() { errs <- send(g, u, ci, fmt.Sprintf("step %d burst %d from %s", step, i, u)) }()
			}
			for i := 0; i < n; i++ {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		case r < 55:
			counts["mark read"]++
			vars := map[string]any{"c": conv.id}
			if rng.Intn(2) == 0 {
				vars["r"] = rng.Int63n(maxSeq(conv.id) + 2)
			}
			act(user, `mutation($c: ID!, $r: Int64) { markConversationRead(conversationID: $c, readSeq: $r) { readSeq } }`, vars)
		case r < 62:
			sentMu.Lock()
			list := sent[conv.id]
			sentMu.Unlock()
			if len(list) == 0 {
				continue
			}
			counts["revoke"]++
			m := list[rng.Intn(len(list))]
			actor := m.sender
			if conv.group && rng.Intn(3) == 0 {
				actor = "alice" // the group's owner
			}
			act(actor, revokeMutation, map[string]any{"c": conv.id, "s": m.seq}, "NOT_FOUND")
		case r < 72:
			sentMu.Lock()
			list := sent[conv.id]
			sentMu.Unlock()
			if len(list) == 0 {
				continue
			}
			m := list[rng.Intn(len(list))]
			if rng.Intn(2) == 0 {
				counts["delete for everyone"]++
				actor := m.sender
				if conv.group && rng.Intn(3) == 0 {
					actor = "alice"
				}
				act(actor, deleteMutation, map[string]any{"c": conv.id, "s": []int64{m.seq}, "all": true}, "NOT_FOUND")
			} else {
				counts["delete for me"]++
				seqs := []int64{m.seq}
				if m.seq > 1 && rng.Intn(2) == 0 {
					seqs = append(seqs, m.seq-1)
				}
				act(user, deleteMutation, map[string]any{"c": conv.id, "s": seqs, "all": false}, "NOT_FOUND")
			}
		case r < 76:
			if rng.Intn(2) == 0 {
				counts["clear for me"]++
				act(user, clearMutation, map[string]any{"c": conv.id, "all": false})
			} else {
				counts["clear for everyone"]++
				actor := user
				if conv.group {
					actor = "alice"
				}
				act(actor, clearMutation, map[string]any{"c": conv.id, "all": true})
			}
		case r < 88:
			d := devices[rng.Intn(len(devices))]
			if d.running() {
				counts["device offline"]++
				if err := d.stop(); err != nil {
					t.Errorf("%s: Run: %v", d.name, err)
				}
			} else {
				counts["device online"]++
				d.start()
			}
		case r < 97:
			counts["network drop"]++
			devices[rng.Intn(len(devices))].client.DropConnection()
		default:
			// An instance shutting down ends its subscriptions with "going away" (1001); its
			// devices reconnect from their last tokens.
			counts["instance going away"]++
			gws[rng.Intn(2)].Hub.EndAll(imsync.ErrShuttingDown)
		}
	}
	t.Logf("%d steps in %v: %v", steps, time.Since(started).Round(time.Millisecond), counts)

	// Quiesce: every device online until it stands at its user's head with every body fetched.
	for _, d := range devices {
		if !d.running() {
			d.start()
		}
	}
	// A last message to everyone: a device whose log was lost in the flush and that has heard
	// nothing since learns it now (a subscription finds out at the user's next event).
	if err := send(gws[1], "alice", len(convs)-1, "last"); err != nil {
		t.Fatal(err)
	}
	heads := map[string]string{}
	for _, u := range users {
		var r struct{ SyncState struct{ Token string } }
		gws[1].Query(tokens[u], `{ syncState(first: 1) { token } }`, nil, &r)
		heads[u] = r.SyncState.Token
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range devices {
		for d.client.Token() != heads[d.user] || d.client.Pending() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up live: at %s with %d bodies pending, head %s", d.name, d.client.Token(), d.client.Pending(), heads[d.user])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	want := map[string]syncclient.Replica{}
	for _, u := range users {
		want[u] = serverReplica(t, gws[0], tokens[u])
	}
	for _, d := range devices {
		if diff := syncclient.Diff(d.client.Replica(), want[d.user]); diff != "" {
			t.Errorf("%s, caught up live, differs from the server:\n%s", d.name, diff)
		}
	}

	// A final Sync over HTTP changes nothing for a device that is up to date.
	for _, d := range devices {
		if err := d.stop(); err != nil {
			t.Errorf("%s: Run: %v", d.name, err)
		}
		if err := d.client.Sync(context.Background()); err != nil {
			t.Fatalf("%s: final Sync: %v", d.name, err)
		}
		if diff := syncclient.Diff(d.client.Replica(), want[d.user]); diff != "" {
			t.Errorf("%s, after a final Sync, differs from the server:\n%s", d.name, diff)
		}
		t.Logf("%s: %d conversations, %d unread, requests %v", d.name, len(want[d.user].Conversations), want[d.user].TotalUnread, d.client.Requests())
	}
	if applied.Load() == 0 {
		t.Fatal("no device applied any event")
	}
	t.Logf("%d events applied over all devices; %d invariant violations", applied.Load(), violations.Load())
}
