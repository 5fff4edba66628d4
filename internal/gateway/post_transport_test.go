package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure a subscription sent over HTTP POST is refused at once with a coded answer naming the
// WebSocket transport, rather than holding the request open until a first event (found by
// FuzzGraphQLRequest's seed corpus).
func TestSubscriptionOverPOSTIsRefused(t *testing.T) {
	g := gatewaytest.Start(t)
	type answer struct {
		resp *http.Response
		r    gatewaytest.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, r, err := gatewaytest.Call(g.URL, g.Token("alice"), "", `subscription { syncEvents { type } }`, nil)
		done <- answer{resp, r, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.resp.StatusCode != http.StatusBadRequest || len(a.r.Errors) != 1 || a.r.Errors[0].Extensions["code"] != "UNSUPPORTED" {
			t.Fatalf("status %d, errors %+v; want 400 UNSUPPORTED", a.resp.StatusCode, a.r.Errors)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request was held open")
	}
}
