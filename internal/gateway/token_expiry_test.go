package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
	"github.com/msggate/msggate/internal/server"
)

// shortToken returns a token for user that expires within ttl, and its exp (a whole second).
func shortToken(t *testing.T, g *gatewaytest.Gateway, user string, ttl time.Duration) (string, time.Time) {
	t.Helper()
	now := time.Now()
	tok, err := auth.Issue(g.Secret, user, false, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok, now.Add(ttl).Truncate(time.Second) // exp is a NumericDate: whole seconds
}

// Ensure a subscribed connection is closed with 4401 within a second of its token's exp,
// whether the token came in connection_init or in the upgrade request's Authorization header,
// while a connection whose token has not expired goes on receiving events.
func TestSubscriptionClosedWhenTokenExpires(t *testing.T) {
	g := gatewaytest.Start(t)
	initTok, initExp := shortToken(t, g, "ivy", 2*time.Second)
	byInit := gatewaytest.ConnectWS(t, g.URL, initTok, gatewaytest.WSOptions{})
	byInit.Subscribe(nil)

	headerTok, headerExp := shortToken(t, g, "ivy", 2*time.Second)
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, strings.Replace(g.URL, "http", "ws", 1)+"/query", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + headerTok}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	byHeader := &gatewaytest.WS{T: t, Conn: conn}
	byHeader.Init(map[string]any{})
	byHeader.Subscribe(nil)

	lasting := gatewaytest.ConnectWS(t, g.URL, g.Token("ivy"), gatewaytest.WSOptions{}) // an hour
	lasting.Subscribe(nil)
	gatewaytest.WaitFor(t, 10*time.Second, "three subscriptions reach the hub", func() bool { return g.Hub.Subscribers() == 3 })

	type end struct {
		at  time.Time
		err error
	}
	wait := func(ws *gatewaytest.WS) <-chan end {
		ch := make(chan end, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			for {
				if _, _, err := ws.Conn.Read(ctx); err != nil {
					ch <- end{time.Now(), err}
					return
				}
			}
		}()
		return ch
	}
	ends := []<-chan end{wait(byInit), wait(byHeader)}
	for i, exp := range []time.Time{initExp, headerExp} {
		e := <-ends[i]
		name := []string{"connection_init token", "header token"}[i]
		if code := websocket.CloseStatus(e.err); code != server.CloseTokenExpired {
			t.Errorf("%s: the connection ended with %v, want close code %d", name, e.err, server.CloseTokenExpired)
			continue
		}
		late := e.at.Sub(exp)
		t.Logf("%s: closed %v after exp", name, late)
		if late < -50*time.Millisecond || late > time.Second {
			t.Errorf("%s: closed %v after its exp, want within a second after it", name, late)
		}
	}
	gatewaytest.WaitFor(t, 10*time.Second, "the expired subscriptions leave the hub", func() bool { return g.Hub.Subscribers() == 1 })

	// The connection whose token is valid is unaffected.
	g.Send("jack", "ivy", "", 1)
	if ev := lasting.NextEvent(); ev.Type != "NEW_MESSAGE" {
		t.Fatalf("after the others expired the lasting connection got %+v, want NEW_MESSAGE", ev)
	}
}
