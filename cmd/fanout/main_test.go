package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/im"
)

// Ensure the command refuses a group larger than a group may be, and arguments it does not
// know, before it builds or starts anything.
func TestRunRefusesBeforeStarting(t *testing.T) {
	tooMany := strconv.Itoa(im.MaxGroupMembers + 1)
	var out bytes.Buffer
	err := run(context.Background(), []string{"-devices", tooMany}, &out, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "members") {
		t.Errorf("-devices %s: %v, want the group size refused", tooMany, err)
	}
	if strings.Contains(out.String(), "building") {
		t.Errorf("-devices %s built the gateway first: %q", tooMany, out.String())
	}
	err = run(context.Background(), []string{"-devices", "10", "extra"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("a stray argument: %v", err)
	}
}
