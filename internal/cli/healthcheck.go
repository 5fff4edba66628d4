package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/gateway"
)

// healthcheckTimeout bounds the probe: a container runtime runs it every few seconds and must
// learn that the gateway hangs, not hang with it.
const healthcheckTimeout = 3 * time.Second

// Healthcheck: msggate healthcheck [-path /healthz|/readyz] [gateway flags]
// It asks the gateway that the same flags and environment describe (its -addr) for path, on
// this machine, and fails unless the answer is 200. It is the container image's HEALTHCHECK:
// the image holds nothing but msggate, no shell and no curl, so the binary probes itself.
func Healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg gateway.Config
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	path := fs.String("path", "/healthz", "what to ask: /healthz (the process answers) or /readyz (MongoDB and Redis answer too)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !strings.HasPrefix(*path, "/") {
		return errors.New("healthcheck: -path must start with /")
	}
	url := "http://" + probeHost(cfg.WithStoreDefaults().Addr) + *path
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, strings.TrimSpace(string(body)))
	return nil
}

// probeHost is the host:port that reaches a gateway listening on addr from its own machine. An
// address on every interface is reached through 127.0.0.1, not "localhost": an image without
// a resolver configuration need not know that name.
func probeHost(addr string) string {
	if h, p, err := net.SplitHostPort(addr); err == nil && (h == "" || h == "::" || h == "0.0.0.0") {
		return net.JoinHostPort("127.0.0.1", p)
	}
	return addr
}
