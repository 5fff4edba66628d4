package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// Ensure -levels reads multiples with or without an x and refuses those not above zero.
func TestParseLevels(t *testing.T) {
	got, err := parseLevels("1, 2x,4,0.5")
	if err != nil || !slices.Equal(got, []float64{1, 2, 4, 0.5}) {
		t.Errorf("parseLevels: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "two"} {
		if _, err := parseLevels(bad); err == nil {
			t.Errorf("parseLevels(%q) accepted", bad)
		}
	}
}

// Ensure a bad -levels and stray arguments are refused before anything starts.
func TestRunRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-levels", "1,0"}, {"-duration", "1s", "extra"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
		if out.Len() > 0 {
			t.Errorf("%q started a run: %q", args, out.String())
		}
	}
	err := run(context.Background(), []string{"-users", "x"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-users") {
		t.Errorf("-users x: %v", err)
	}
}
