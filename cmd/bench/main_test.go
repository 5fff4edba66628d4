package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/devtools/bench"
)

// Ensure the flags take the package's defaults and bad arguments are refused before the bench
// starts anything.
func TestRunFlags(t *testing.T) {
	var help bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &help); err != flag.ErrHelp {
		t.Fatalf("-h: %v", err)
	}
	if !strings.Contains(help.String(), fmt.Sprintf("(default %s)", bench.DefaultDuration)) ||
		!strings.Contains(help.String(), fmt.Sprintf("(default %d)", bench.DefaultConcurrency)) {
		t.Errorf("usage lacks the package's defaults:\n%s", help.String())
	}
	if err := run(context.Background(), []string{"extra"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "unexpected") {
		t.Errorf("a stray argument: %v", err)
	}
}
