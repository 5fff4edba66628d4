package gateway_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/gateway"
)

// Ensure the handler's flags land in Config.Handler, which the gateway hands to the GraphQL
// handler whole, and default to the handler's own defaults.
func TestFlagsFillHandlerOptions(t *testing.T) {
	var def gateway.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	def.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	h := def.Handler
	if h.MaxBodyBytes != graph.DefaultMaxBodyBytes || h.RequestTimeout != graph.DefaultRequestTimeout ||
		h.RateLimit != graph.DefaultRateLimit || h.KeepAlive != graph.DefaultKeepAlive ||
		h.ConnectionRate != graph.DefaultConnectionRate || !h.Introspection {
		t.Fatalf("defaults: %+v", h)
	}

	var set gateway.Config
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	set.RegisterFlags(fs)
	if err := fs.Parse([]string{"-rate-limit", "3", "-max-depth", "-1", "-ws-keepalive", "2s",
		"-introspection=false", "-client-ip-header", "X-Real-IP", "-ws-per-user", "4"}); err != nil {
		t.Fatal(err)
	}
	h = set.Handler
	if h.RateLimit != 3 || h.MaxDepth != -1 || h.KeepAlive != 2*time.Second || h.Introspection ||
		h.ClientIPHeader != "X-Real-IP" || h.MaxConnectionsPerUser != 4 {
		t.Fatalf("set: %+v", h)
	}
}

// Ensure the bounds on persisted query registrations come from their flags, and default to
// the handler's defaults.
func TestPersistedQueryFlags(t *testing.T) {
	for _, c := range []struct {
		args         []string
		count, bytes int64
	}{
		{nil, graph.DefaultPersistedQueriesPerUser, graph.DefaultPersistedQueryBytesPerUser},
		{[]string{"-apq-per-user", "5", "-apq-bytes-per-user", "-1"}, 5, -1},
	} {
		var cfg gateway.Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if h := cfg.Handler; int64(h.PersistedQueriesPerUser) != c.count || h.PersistedQueryBytesPerUser != c.bytes {
			t.Errorf("%v: %d queries, %d bytes; want %d, %d", c.args, h.PersistedQueriesPerUser, h.PersistedQueryBytesPerUser, c.count, c.bytes)
		}
	}
}
