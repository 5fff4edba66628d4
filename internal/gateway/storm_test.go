package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/im"
)

// Ensure a reconnect storm (every device of a group's members subscribing at once, as after a
// gateway restart, with Redis's admission queue too short for all their reads) is paced, not
// refused: no device's subscription is answered with an error, every one goes live, the
// gateway then holds two goroutines a device, and one message reaches every device. On the
// embedded store (FerretDB in the gateway's process) and on a FerretDB process.
func TestReconnectStormIsPacedNotRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and FerretDB")
	}
	const members, perMember = 100, 2
	tune := func(c *gateway.Config) {
		c.Handler.ConnectionRate, c.Handler.MaxConnectionsPerUser, c.Handler.MaxPendingConnectionsPerAddress, c.Handler.RateLimit = -1, -1, -1, -1
		// Far fewer Redis calls may wait than the storm's subscriptions make at once.
		c.RedisConcurrency, c.AdmissionQueue = 2, 8
	}
	t.Run("embedded store", func(t *testing.T) {
		cfg := gatewaytest.Config(testenv.Redis(t).URL(), testenv.Mongo(t))
		cfg.MongoURI, cfg.MongoDatabase, cfg.DataDir = "", "", filepath.Join(t.TempDir(), "data")
		tune(&cfg)
		// The embedded store runs as long as the context it was opened with: the test's.
		gw, err := gateway.Open(t.Context(), cfg, gatewaytest.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gw.Close() })
		select {
		case <-gw.Store.Ready():
		case <-time.After(time.Minute):
			t.Fatal("the embedded store was not prepared within a minute")
		}
		g := &gatewaytest.Gateway{Gateway: gw, T: t, URL: gatewaytest.Serve(t, gw)}
		reconnectStorm(t, g, members, perMember)
	})
	t.Run("FerretDB process", func(t *testing.T) {
		reconnectStorm(t, gatewaytest.StartWith(t, tune), members, perMember)
	})
}

func reconnectStorm(t *testing.T, g *gatewaytest.Gateway, members, perMember int) {
	ctx := context.Background()
	list := make([]im.GroupMember, members)
	tokens := make([]string, members)
	for i := range list {
		list[i] = im.GroupMember{UserID: fmt.Sprintf("storm%03d", i), Role: im.RoleMember}
		tokens[i] = g.Token(list[i].UserID)
	}
	list[0].Role = im.RoleOwner
	if err := g.Ledger.SetGroup(ctx, "storm", list); err != nil {
		t.Fatal(err)
	}
	n := members * perMember
	devices := make([]*gatewaytest.WS, n)
	for i := range devices {
		devices[i] = gatewaytest.ConnectWS(t, g.URL, tokens[i%members], gatewaytest.WSOptions{})
	}
	// The client connections hold no goroutine while nobody reads them: what grows is the
	// gateway's.
	runtime.GC()
	before := runtime.NumGoroutine()
	for _, d := range devices {
		d.Subscribe(nil)
	}
	for deadline := time.Now().Add(2 * time.Minute); g.Hub.LiveSubscribers() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscriptions live (%d open) 2 minutes after they were sent", g.Hub.LiveSubscribers(), n, g.Hub.Subscribers())
		}
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the starts' goroutines end", func() bool {
		return float64(runtime.NumGoroutine()-before)/float64(n) <= 2.05
	})

	sent := g.SendGQL(tokens[0], map[string]any{"groupID": "storm", "contentType": 101, "content": "after the storm"})
	for i, d := range devices {
		// A refused subscription's first message is its error: NextEvent fails on it.
		ev := d.NextEvent()
		if ev.Type != "NEW_MESSAGE" || ev.ConversationID == nil || *ev.ConversationID != sent.ConversationID || ev.Seq == nil || *ev.Seq != sent.Seq {
			t.Fatalf("device %d of %s: first event %+v, want NEW_MESSAGE seq %d of %s", i, list[i%members].UserID, ev, sent.Seq, sent.ConversationID)
		}
	}
}

// Ensure a subscription waiting for Redis to confirm its user's channel holds no goroutine
// beyond its connection's reader and its stream's: in a reconnect storm thousands of devices
// wait for that round trip at once. Redis is paused while the devices subscribe; once it
// answers again, every subscription goes live and a message reaches every device.
func TestSubscriptionAwaitingRedisHoldsTwoGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and FerretDB")
	}
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.ConnectionRate, c.Handler.MaxConnectionsPerUser, c.Handler.MaxPendingConnectionsPerAddress, c.Handler.RateLimit = -1, -1, -1, -1
	})
	ctx := context.Background()
	const n = 40
	users := make([]im.GroupMember, n)
	tokens := make([]string, n)
	for i := range users {
		users[i] = im.GroupMember{UserID: fmt.Sprintf("wait%02d", i), Role: im.RoleMember}
		tokens[i] = g.Token(users[i].UserID)
	}
	users[0].Role = im.RoleOwner
	if err := g.Ledger.SetGroup(ctx, "waiting", users); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: g.Redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Counted from before the connections: a device's reader is one of its two. The client
	// connections hold no goroutine while nobody reads them.
	runtime.GC()
	before := runtime.NumGoroutine()
	devices := make([]*gatewaytest.WS, n)
	for i := range devices {
		devices[i] = gatewaytest.ConnectWS(t, g.URL, tokens[i], gatewaytest.WSOptions{})
	}
	const pause = 3 * time.Second
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	for _, d := range devices {
		d.Subscribe(nil)
	}
	peak := 0
	for time.Since(paused) < pause-time.Second {
		peak = max(peak, runtime.NumGoroutine()-before)
		time.Sleep(20 * time.Millisecond)
	}
	if err := rdb.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if per := float64(peak) / n; per > 2.05 {
		t.Errorf("while Redis confirmed nothing, the subscribing devices held %.2f goroutines each (%d for %d), want at most 2", per, peak, n)
	}
	gatewaytest.WaitFor(t, time.Minute, "every subscription goes live", func() bool { return g.Hub.LiveSubscribers() == n })
	sent := g.SendGQL(tokens[0], map[string]any{"groupID": "waiting", "contentType": 101, "content": "after the wait"})
	for i, d := range devices {
		if ev := d.NextEvent(); ev.Type != "NEW_MESSAGE" || ev.Seq == nil || *ev.Seq != sent.Seq {
			t.Fatalf("device %d: first event %+v, want NEW_MESSAGE seq %d", i, ev, sent.Seq)
		}
	}
}
