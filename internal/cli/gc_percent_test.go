package cli_test

import (
	"runtime/debug"
	"testing"

	"github.com/msggate/msggate/internal/cli"
)

// Ensure the gateway runs its collector at DefaultGCPercent when GOGC is not set, and leaves
// an operator's GOGC alone.
func TestServeGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	cli.ApplyGCPercent(func(string) string { return "" })
	if now := debug.SetGCPercent(100); now != cli.DefaultGCPercent {
		t.Errorf("without GOGC the runtime's target is %d, want %d", now, cli.DefaultGCPercent)
	}

	debug.SetGCPercent(200) // as GOGC=200 would have set it before main
	cli.ApplyGCPercent(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if now := debug.SetGCPercent(100); now != 200 {
		t.Errorf("with GOGC=200 the runtime's target is %d, want 200", now)
	}
}
