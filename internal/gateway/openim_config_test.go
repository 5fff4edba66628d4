package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim"
)

// Ensure OpenIM mode's settings come from flags and the environment (the flag wins), and a
// malformed MSGGATE_OPENIM stops the start instead of leaving the mode off.
func TestOpenIMConfig(t *testing.T) {
	parse := func(args ...string) gateway.Config {
		t.Helper()
		var c gateway.Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := parse().OpenIM; c.Enabled || c.RedisURL != "" || c.Secret != "" {
		t.Errorf("defaults: %+v", c)
	}
	t.Setenv("MSGGATE_OPENIM", "true")
	t.Setenv("MSGGATE_OPENIM_REDIS_URL", "redis://openim:6379/0")
	t.Setenv("MSGGATE_OPENIM_SECRET", "openIM123")
	if c := parse().OpenIM; !c.Enabled || c.RedisURL != "redis://openim:6379/0" || c.Secret != "openIM123" {
		t.Errorf("from the environment: %+v", c)
	}
	if c := parse("-openim=false", "-openim-redis-url", "redis://other:6379", "-openim-secret", "s").OpenIM; c.Enabled || c.RedisURL != "redis://other:6379" || c.Secret != "s" {
		t.Errorf("the flags win: %+v", c)
	}
	t.Setenv("MSGGATE_OPENIM", "yes please")
	cfg := parse()
	cfg.DataDir = t.TempDir() // were it to start msggate's own store, not in the source tree
	if _, err := gateway.Open(context.Background(), cfg, gatewaytest.Logger(t)); err == nil || !strings.Contains(err.Error(), "MSGGATE_OPENIM") {
		t.Errorf("a malformed MSGGATE_OPENIM: %v", err)
	}
}

// Ensure a gateway in OpenIM mode does not start without what the mode needs, nor on a
// database that is not OpenIM's (msggate's own included), naming what is wrong, and that it
// creates nothing in such a database.
func TestOpenIMStartUpErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(cfg gateway.Config) error {
		t.Helper()
		g, err := gateway.Open(ctx, cfg, gatewaytest.Logger(t))
		if err == nil {
			_ = g.Close()
		}
		return err
	}

	err := open(gateway.Config{OpenIM: gateway.OpenIMConfig{Enabled: true}, DataDir: t.TempDir()})
	for _, want := range []string{"-mongo-uri", "-openim-redis-url", "MSGGATE_OPENIM_SECRET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("nothing configured: %v, want it to name %s", err, want)
		}
	}

	rs := testenv.Redis(t)
	empty := testenv.Mongo(t)
	cfg := gatewaytest.Config(rs.URL(), empty)
	cfg.OpenIM = gateway.OpenIMConfig{Enabled: true, RedisURL: rs.URL(), Secret: "openIM123"}
	retained := cfg
	retained.Retention.Days = 30
	if err := open(retained); err == nil || !strings.Contains(err.Error(), "-retention-days") {
		t.Errorf("with retention: %v", err)
	}
	withIdP := cfg
	withIdP.IdentityProvider.JWKS = "https://id.example.com/jwks.json"
	if err := open(withIdP); err == nil || !strings.Contains(err.Error(), "-jwks") {
		t.Errorf("with an identity provider: %v", err)
	}
	err = open(cfg)
	if !errors.Is(err, openim.ErrNotOpenIM) || !strings.Contains(err.Error(), "msg and seq") || !strings.Contains(err.Error(), empty.Database()) {
		t.Errorf("an empty database: %v, want ErrNotOpenIM naming the database and msg and seq", err)
	}
	if names, _ := empty.Connect(t, nil).ListCollectionNames(ctx, bson.D{}); len(names) != 0 {
		t.Errorf("the OpenIM-mode start created collections %v", names)
	}

	own := gatewaytest.Start(t) // msggate's own database, on its own FerretDB database
	cfg.MongoDatabase = own.Config.MongoDatabase
	if err := open(cfg); !errors.Is(err, openim.ErrNotOpenIM) || !strings.Contains(err.Error(), "msggate's own") {
		t.Errorf("msggate's own database: %v, want ErrNotOpenIM saying so", err)
	}
}

// Ensure /readyz in OpenIM mode checks OpenIM's MongoDB and Redis and msggate's own Redis, and
// that the root page says how to authenticate.
func TestOpenIMReadiness(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartOpenIM(t, func(c *gateway.Config) { c.Playground = false })
	resp, err := http.Get(g.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || body.Status != "ready" || len(body.Checks) != 3 ||
		body.Checks["openim-mongodb"] != "ok" || body.Checks["openim-redis"] != "ok" || body.Checks["redis"] != "ok" {
		t.Errorf("/readyz %d %+v", resp.StatusCode, body)
	}
	root, err := http.Get(g.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Body.Close()
	text, _ := io.ReadAll(root.Body)
	if !strings.Contains(string(text), "OpenIM mode") || !strings.Contains(string(text), "token: <token>") {
		t.Errorf("root page: %s", text)
	}
}
