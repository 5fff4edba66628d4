package gateway_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/server"
)

// Ensure the handler's flags land in Config.Handler, which the gateway hands to the GraphQL
// handler whole, and default to the handler's own defaults.
func TestFlagsFillHandlerSettings(t *testing.T) {
	var def gateway.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	def.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	h := def.WithStoreDefaults().Handler
	if h.MaxBodyBytes != server.DefaultMaxBodyBytes || h.RequestTimeout != server.DefaultRequestTimeout ||
		h.RateLimit != server.DefaultRateLimit || h.KeepAlive != server.DefaultKeepAlive ||
		h.ConnectionRate != server.DefaultConnectionRate || !h.Introspection {
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

// Ensure the defaults that depend on the store are the embedded default's for a developer
// (loopback only, introspection and GraphiQL on) and a real store's for production (every
// interface, introspection and GraphiQL off), and that the flags override either way.
func TestDefaultsDependOnTheStore(t *testing.T) {
	t.Setenv(gateway.EnvAddr, "")
	t.Setenv(gateway.EnvMongoURI, "")
	t.Setenv(gateway.EnvMetricsAddr, "")
	const mongo = "mongodb://db.example:27017"
	for _, tc := range []struct {
		args                      []string
		addr                      string
		introspection, playground bool
	}{
		{nil, gateway.DefaultEmbeddedAddr, true, true},
		{[]string{"-addr", ":9000", "-playground=false"}, ":9000", true, false},
		{[]string{"-mongo-uri", mongo}, gateway.DefaultAddr, false, false},
		{[]string{"-introspection", "-mongo-uri", mongo, "-playground"}, gateway.DefaultAddr, true, true},
		{[]string{"-mongo-uri", mongo, "-addr", "10.0.0.5:8080", "-introspection=true"}, "10.0.0.5:8080", true, false},
	} {
		var c gateway.Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got := c.WithStoreDefaults()
		if got.Addr != tc.addr || got.Handler.Introspection != tc.introspection || got.Playground != tc.playground {
			t.Errorf("%q: addr %q, introspection %v, GraphiQL %v; want %q, %v, %v", tc.args,
				got.Addr, got.Handler.Introspection, got.Playground, tc.addr, tc.introspection, tc.playground)
		}
	}

	// A Config written in code means what it says, whatever the store.
	code := gateway.Config{Addr: "127.0.0.1:0", Playground: true}.WithStoreDefaults()
	if code.Addr != "127.0.0.1:0" || !code.Playground || code.Handler.Introspection {
		t.Errorf("a Config written in code became %q, GraphiQL %v, introspection %v", code.Addr, code.Playground, code.Handler.Introspection)
	}
}

// Ensure -jwt-any-audience and -jwt-any-issuer, and their environment variables, say that any
// audience or issuer will do, and are off unless given.
func TestIdentityProviderAnyFlags(t *testing.T) {
	parse := func(args ...string) gateway.IdentityProviderConfig {
		t.Helper()
		var c gateway.Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c.IdentityProvider
	}
	if c := parse("-jwks", "keys.json"); c.AnyAudience || c.AnyIssuer {
		t.Errorf("without the flags: %+v, want neither", c)
	}
	if c := parse("-jwks", "keys.json", "-jwt-any-audience", "-jwt-any-issuer"); !c.AnyAudience || !c.AnyIssuer {
		t.Errorf("with the flags: %+v, want both", c)
	}
	t.Setenv(gateway.EnvJWTAnyAudience, "true")
	if c := parse("-jwks", "keys.json"); !c.AnyAudience || c.AnyIssuer {
		t.Errorf("with %s=true: %+v, want AnyAudience only", gateway.EnvJWTAnyAudience, c)
	}
}

// Ensure the bounds on persisted query registrations come from their flags, and default to
// the handler's defaults.
func TestPersistedQueryFlags(t *testing.T) {
	for _, c := range []struct {
		args         []string
		count, bytes int64
	}{
		{nil, server.DefaultPersistedQueriesPerUser, server.DefaultPersistedQueryBytesPerUser},
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
