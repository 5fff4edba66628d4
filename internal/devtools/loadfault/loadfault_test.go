package loadfault_test

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cli"
	"github.com/msggate/msggate/internal/devtools/loadfault"
)

// gatewayChild marks a run of this test binary as one of the harness's gateway processes.
const gatewayChild = "MSGGATE_LOADFAULT_TEST_GATEWAY"

// TestMain lets the harness start this test binary as a gateway ("serve" and its flags), so
// the short run needs no separate build of the command and its gateways run with the same
// instrumentation (-race) as the test.
func TestMain(m *testing.M) {
	if os.Getenv(gatewayChild) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "serve" {
			args = args[1:]
		}
		if err := cli.Serve(ctx, args, os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString("gateway: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Ensure the short run holds every promise through one fault of each kind: no acknowledged
// send lost or doubled, every replica equal to the server, and each part back.
func TestLoadAndFaultsShort(t *testing.T) {
	var out strings.Builder
	seed := time.Now().UnixNano()
	r, err := loadfault.Run(context.Background(), loadfault.Options{
		Duration: 20 * time.Second, Users: 16, Think: time.Second, FaultRounds: 1, Seed: seed,
		Dir:        t.TempDir(),
		Gateway:    []string{os.Args[0], "serve"},
		GatewayEnv: []string{gatewayChild + "=1"},
		Out:        &out,
	})
	t.Log(out.String())
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	kinds := map[string]bool{}
	for _, f := range r.Faults {
		kinds[f.Kind] = true
		if f.Down <= 0 {
			t.Errorf("%s of %s: down %s", f.Kind, f.Target, f.Down)
		}
	}
	if len(kinds) != 3 {
		t.Errorf("faults injected: %+v, want one of each of the three kinds", r.Faults)
	}
	s := r.Sends
	if s.Acknowledged < 30 || s.Stored != s.Acknowledged || s.Lost != 0 || s.Duplicated != 0 {
		t.Errorf("sends: %+v, want at least 30 acknowledged, every one stored, none lost or duplicated", s)
	}
	if r.ReplicasConverged != r.Devices || r.Devices != 32 {
		t.Errorf("%d of %d replicas converged, want all 32", r.ReplicasConverged, r.Devices)
	}
	// The load's figures are read from the run: what the users offered and what was answered,
	// and the first attempts their retry budgets saw.
	if l := r.Load; l.Offered <= 0 || l.Answered <= 0 || l.P99 <= 0 || r.Retries.FirstAttempts == 0 {
		t.Errorf("load %+v, retries %+v: want offered and answered requests, a p99 and first attempts", l, r.Retries)
	}
	for _, in := range r.Instances {
		if in.Before.Goroutines == 0 || in.Peak.Goroutines < in.Before.Goroutines || in.After.Goroutines == 0 {
			t.Errorf("%s: figures %+v: before, peak and after must all be read", in.Name, in)
		}
	}
}
