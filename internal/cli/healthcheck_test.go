package cli_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/gateway/gatewaytest"
)

// Ensure `msggate healthcheck` succeeds against a running gateway, on /healthz and on /readyz,
// reaching it by the same -addr the gateway was given (an address on every interface too), and
// fails when nothing listens or the answer is not 200: a container runtime reads only its exit.
func TestHealthcheck(t *testing.T) {
	g := gatewaytest.Start(t)
	addr := strings.TrimPrefix(g.URL, "http://")
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, args := range [][]string{
		{"-addr", addr},
		{"-addr", ":" + port, "-path", "/readyz"},
	} {
		var out bytes.Buffer
		if err := cli.Healthcheck(ctx, args, &out, io.Discard); err != nil {
			t.Errorf("healthcheck %v: %v", args, err)
		}
		if !strings.Contains(out.String(), "http://127.0.0.1:"+port) {
			t.Errorf("healthcheck %v printed %q, want the URL it asked", args, out.String())
		}
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()
	if err := cli.Healthcheck(ctx, []string{"-addr", nobody}, io.Discard, io.Discard); err == nil {
		t.Error("healthcheck succeeded with nothing listening")
	}

	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"unavailable","failing":["mongodb"]}`)
	}))
	defer notReady.Close()
	err = cli.Healthcheck(ctx, []string{"-addr", strings.TrimPrefix(notReady.URL, "http://"), "-path", "/readyz"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "mongodb") {
		t.Errorf("healthcheck of a 503: %v, want an error with the status and the body", err)
	}
}
