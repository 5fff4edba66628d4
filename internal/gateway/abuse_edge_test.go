package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/openim/openimtest"
	"github.com/msggate/msggate/internal/testenv"
)

// Ensure a client on the legacy graphql-ws protocol whose connection_init cannot be checked
// for an internal reason (OpenIM's Redis, where every token check reads, is down) learns no
// more than an HTTP client would: connection_error carries the message and code HTTP answers
// for the same token, never the Redis address or the dial error behind it, which the
// operator finds in the log.
func TestAbuseLegacyWSInitErrorRevealsNoCause(t *testing.T) {
	mdb := testenv.Mongo(t)
	imRedis := testenv.Redis(t)
	deployment := openimtest.NewAt(t, mdb.Connect(t, nil), imRedis.Addr())
	cfg := gatewaytest.Config(testenv.Redis(t).URL(), mdb)
	cfg.JWTSecret = ""
	cfg.OpenIM = gateway.OpenIMConfig{Enabled: true, RedisURL: imRedis.URL(), Secret: deployment.Secret}
	var logs testenv.LogBuffer
	gw := gatewaytest.OpenObserved(t, cfg, gateway.Observers{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	url := gatewaytest.Serve(t, gw)
	token := deployment.Login("bob", 1, 7)
	imRedis.Stop()

	http := gatewaytest.Client(t, url).Post(token, `{ viewer { userID } }`, nil)
	if len(http.Errors) != 1 || http.Errors[0].Extensions["code"] != "UNAVAILABLE" {
		t.Fatalf("over HTTP with OpenIM's Redis down: %+v, want one UNAVAILABLE error", http.Errors)
	}

	c := gatewaytest.DialWS(t, url, gatewaytest.WSOptions{Protocol: "graphql-ws"})
	c.Write(map[string]any{"type": "connection_init", "payload": map[string]any{"token": token}})
	m := c.Next()
	raw, _ := json.Marshal(m)
	if m["type"] != "connection_error" {
		t.Fatalf("after connection_init: %s, want connection_error", raw)
	}
	var refused gatewaytest.Error
	b, _ := json.Marshal(m["payload"])
	if err := json.Unmarshal(b, &refused); err != nil {
		t.Fatal(err)
	}
	if refused.Message != http.Errors[0].Message || refused.Extensions["code"] != "UNAVAILABLE" {
		t.Errorf("connection_error %s, want HTTP's message %q and code UNAVAILABLE", b, http.Errors[0].Message)
	}
	_, port, _ := net.SplitHostPort(imRedis.Addr())
	for _, secret := range []string{imRedis.Addr(), ":" + port, "refused", "dial", "redis get"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("connection_error reveals %q: %s", secret, raw)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Read(ctx); websocket.CloseStatus(err) != 1013 {
		t.Errorf("then closed with %v, want 1013 (try again later)", err)
	}

	logged := false
	for _, line := range logs.Lines(t) {
		if s, _ := line["err"].(string); line["code"] == "UNAVAILABLE" && strings.Contains(s, imRedis.Addr()) {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no log line gives the cause with OpenIM's Redis address %s", imRedis.Addr())
	}
}
