package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The bench runs end to end on both engines, on a corpus small enough for a test, and
// reports every query kind with hits found: a kind that finds nothing would time nothing.
func TestBenchRuns(t *testing.T) {
	for _, engine := range []string{"pg", "bleve"} {
		t.Run(engine, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), []string{"-engine", engine, "-messages", "3000", "-conversations", "400",
				"-scopes", "100", "-queries", "3", "-dir", t.TempDir()}, &out, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			rows := 0
			for _, line := range strings.Split(out.String(), "\n") {
				if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| query") {
					continue
				}
				rows++
				if strings.HasSuffix(line, "| 0.0 | 0 (100% exact) |") && !strings.Contains(line, "rare") && !strings.Contains(line, "sender") {
					t.Errorf("a query kind found nothing: %s", line)
				}
			}
			if rows != 10 {
				t.Errorf("%d query kinds reported, want 10:\n%s", rows, out.String())
			}
			if !strings.Contains(out.String(), "messages/s") || !strings.Contains(out.String(), "index size:") {
				t.Errorf("no throughput or size in the report:\n%s", out.String())
			}
		})
	}
}
