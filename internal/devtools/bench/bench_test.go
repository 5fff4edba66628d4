package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Ensure a short bench run measures every scenario, the group page, the jumps into history
// and the OpenIM mode ones too, without errors, after checking that each baseline answers the same JSON as the gateway,
// and prints the ratios, the group page's over the single chat's among them.
func TestBenchRun(t *testing.T) {
	var out bytes.Buffer
	r, err := Run(context.Background(), Options{Duration: 300 * time.Millisecond, Rounds: 1, Concurrency: 4, ColdRequests: 3, Dir: t.TempDir(), Out: &out, BigList: 30, TimeLength: 2000})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	if len(r.Rows) != 26 {
		t.Fatalf("%d rows, want 26 (12 scenarios, 3 of them in OpenIM mode and one traced against untraced, × two handlers, the cold page and cold seqAtTime)\n%s", len(r.Rows), out.String())
	}
	for _, row := range r.Rows {
		if row.Requests == 0 || row.Errors != 0 || row.P50 <= 0 || row.P99 < row.P50 {
			t.Errorf("%s / %s: %+v", row.Scenario, row.Handler, row)
		}
	}
	if r.BigListRatio <= 0 || !strings.Contains(out.String(), "the list page of 30 conversations / of 20") {
		t.Errorf("the list page of 30 conversations against 20's: %v\n%s", r.BigListRatio, out.String())
	}
	if len(r.Ratios) != 12 {
		t.Errorf("ratios: %v, want one per warm scenario", r.Ratios)
	}
	for name, ratio := range r.Ratios {
		if ratio <= 0 {
			t.Errorf("%s: ratio %v", name, ratio)
		}
		if !strings.Contains(out.String(), name) {
			t.Errorf("the report does not name %q:\n%s", name, out.String())
		}
	}
	if r.GroupOverSingle <= 0 || !strings.Contains(out.String(), "the group page over the single chat's page") {
		t.Errorf("the group page is not compared with the single chat's (%v):\n%s", r.GroupOverSingle, out.String())
	}
}
