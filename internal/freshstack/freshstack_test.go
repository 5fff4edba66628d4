package freshstack

import (
	"runtime"
	"strings"
	"testing"
)

// Ensure Run runs f to completion before it returns, on another goroutine (whose stack is
// not the caller's), and raises f's panic in the caller, so that a recover there catches it.
func TestRun(t *testing.T) {
	caller := goroutineID()
	var ran string
	Run(func() { ran = goroutineID() })
	if ran == "" || ran == caller {
		t.Fatalf("f ran on goroutine %q, the caller is %q: want another one", ran, caller)
	}

	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want f's panic", p)
		}
	}()
	Run(func() { panic("boom") })
	t.Fatal("Run returned after f panicked")
}

// goroutineID reads the running goroutine's ID from its stack trace's first line.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(b), "goroutine "), " ")
	return id
}
