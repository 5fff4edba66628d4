package gateway_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// What one idle subscribed device may cost the gateway, at most: heap and stacks, of them
// stacks, and goroutines (the connection's reader and the subscription's stream). Issue 31's
// target is 40 KiB of resident memory, which counts the heap the collector lets grow past
// what is live (as much again by default): heap and stacks must stay well below it. The two
// goroutines idle on stacks that collections halve to 4 KiB each; a stack left at 8 KiB (a
// goroutine waiting below a deep frame) shows as more than idleDeviceStacks.
const (
	idleDeviceBudget     = 25 << 10
	idleDeviceStacks     = 10 << 10
	idleDeviceGoroutines = 2
)

// Ensure an idle device (a WebSocket connection with one syncEvents subscription, nothing
// arriving) costs the gateway at most idleDeviceBudget of memory and idleDeviceGoroutines. The devices are bare TCP
// connections speaking just enough WebSocket to initialise and subscribe, and never read, so
// that the process's heap growth is the gateway's (a net.Conn each aside, well under 1 KiB).
// MSGGATE_IDLE_DEVICES sets how many (default 1,000: fewer leave the fixed costs of the hub and pools too large a share); MSGGATE_IDLE_PROFILE names a file to
// write a heap profile of them to. Under -race the numbers are only logged.
func TestIdleSubscriptionMemory(t *testing.T) {
	n := 1000
	if s := os.Getenv("MSGGATE_IDLE_DEVICES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	profile := os.Getenv("MSGGATE_IDLE_PROFILE")
	if profile != "" {
		runtime.MemProfileRate = 1
		defer func() { runtime.MemProfileRate = 512 << 10 }()
	}
	g := gatewaytest.StartWith(t, func(c *gateway.Config) {
		c.Handler.ConnectionRate, c.Handler.MaxConnectionsPerUser, c.Handler.MaxPendingConnectionsPerAddress, c.Handler.RateLimit = -1, -1, -1, -1
	})
	addr := strings.TrimPrefix(g.URL, "http://")
	const devicesPerUser = 5
	tokens := make([]string, (n+devicesPerUser-1)/devicesPerUser)
	for i := range tokens {
		tokens[i] = g.Token(fmt.Sprintf("idle%04d", i))
	}
	// One device first, so that what the gateway starts once (the hub's Redis subscription,
	// pools) is not counted.
	warm := dialIdleDevice(t, addr, tokens[0])
	gatewaytest.WaitFor(t, 20*time.Second, "the first device subscribes", func() bool { return g.Hub.Subscribers() == 1 })
	before, goroutinesBefore := settledMemory()
	stackBefore := stackInuse()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dialIdleDevice(t, addr, tokens[i/devicesPerUser])
	}
	gatewaytest.WaitFor(t, 60*time.Second, "every device subscribes", func() bool { return g.Hub.Subscribers() == n+1 })
	after, goroutinesAfter := settledMemory()
	perDevice := (after - before) / uint64(n)
	stacks := (stackInuse() - stackBefore) / uint64(n)
	t.Logf("%d idle subscribed devices: %.1f KiB each (%.1f KiB heap, %.1f KiB stacks), %.2f goroutines each",
		n, float64(perDevice)/1024, float64(perDevice-stacks)/1024, float64(stacks)/1024,
		float64(goroutinesAfter-goroutinesBefore)/float64(n))
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			t.Fatal(err)
		}
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
		if f, err = os.Create(profile + ".goroutines"); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	}
	if !raceEnabled && perDevice > idleDeviceBudget {
		t.Errorf("an idle subscribed device costs %d bytes, want at most %d", perDevice, idleDeviceBudget)
	}
	if !raceEnabled && stacks > idleDeviceStacks {
		t.Errorf("an idle subscribed device's goroutines hold %d bytes of stack, want at most %d", stacks, idleDeviceStacks)
	}
	if g := float64(goroutinesAfter-goroutinesBefore) / float64(n); g > idleDeviceGoroutines+0.05 {
		t.Errorf("an idle subscribed device holds %.2f goroutines, want at most %d", g, idleDeviceGoroutines)
	}
	for _, c := range append(conns, warm) {
		_ = c.Close()
	}
}

// settledMemory collects garbage and returns the heap and stack memory in use, and the
// goroutines, once background work has settled.
func settledMemory() (uint64, int) {
	time.Sleep(500 * time.Millisecond)
	// Several collections: each may halve a stack that uses less than a quarter of it.
	for range 5 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse, runtime.NumGoroutine()
}

func stackInuse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}

// dialIdleDevice opens a WebSocket connection by hand (graphql-transport-ws), initialises it
// with token, subscribes to syncEvents, and reads nothing more.
func dialIdleDevice(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET /query HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, m := range []map[string]any{
		{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}},
		{"id": "1", "type": "subscribe", "payload": map[string]any{"query": `subscription { syncEvents { type token position } }`}},
	} {
		writeMaskedText(t, c, m)
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// writeMaskedText writes v as one masked text frame (with a zero mask: the payload is sent as
// is, which RFC 6455 allows).
func writeMaskedText(t *testing.T, c net.Conn, v any) {
	t.Helper()
	p, _ := json.Marshal(v)
	frame := []byte{0x81}
	switch {
	case len(p) < 126:
		frame = append(frame, 0x80|byte(len(p)))
	default:
		frame = append(frame, 0x80|126)
		frame = binary.BigEndian.AppendUint16(frame, uint16(len(p)))
	}
	frame = append(frame, 0, 0, 0, 0)
	frame = append(frame, p...)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
}
