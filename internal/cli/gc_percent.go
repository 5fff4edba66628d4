package cli

import "runtime/debug"

// DefaultGCPercent is the garbage collector's target the gateway runs with when the
// environment's GOGC does not set one: a collection once the heap has grown by half of what
// was live, rather than Go's default of as much again. A gateway's memory is mostly its idle
// connections, and the operating system is charged for the heap the collector lets grow
// between collections (stacks included in what it grows by) as well as for what is live: the
// lower target keeps the resident memory per idle device within what issue 31 asks, for more
// frequent collections (docs/performance.md, "What an idle device holds").
const DefaultGCPercent = 50

// applyGCPercent sets DefaultGCPercent unless GOGC (read with getenv) chose a target, which
// the runtime has applied already.
func applyGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
