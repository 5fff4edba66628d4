package loadfault

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/msggate/msggate/syncclient"
)

// Report is what a run measured and found.
type Report struct {
	Seed     int64
	Duration time.Duration
	Think    time.Duration
	Users    int
	Devices  int

	Ops []OpFigures
	// Load is the users' requests over the load's duration: offered, answered (goodput),
	// refused and failed.
	Load LoadFigures
	// Retries is what the users' retry budgets allowed and held back, summed.
	Retries syncclient.BudgetStats
	Sends   SendFigures
	Faults  []FaultFigures
	// FailuresOutsideFaults and RefusalsOutsideFaults count, by code, failed and refused
	// requests seen before the first fault.
	FailuresOutsideFaults, RefusalsOutsideFaults map[string]int
	// DeviceRefusals and DeviceFailures count the devices' connection attempts that the
	// gateway refused, and that failed by code (syncclient.Client.Outcomes).
	DeviceRefusals int
	DeviceFailures map[string]int
	// Internal counts the requests of users and devices answered INTERNAL.
	Internal  int
	Instances []InstanceFigures
	// FailureExamples holds the first error message seen for each failure code.
	FailureExamples map[string]string

	ReplicasConverged int
	// ReplicaDiffs holds how the first devices that did not converge differ.
	ReplicaDiffs []string
	// Violations holds the first broken promises word for word; Violated counts them all.
	Violations []string
	Violated   int
	// Failed names each check that failed; empty when the run passed.
	Failed []string
}

// OpFigures is one operation's throughput and latency (of the answered requests).
type OpFigures struct {
	Name                string
	OK, Refused, Failed int
	PerSecond           float64
	P50, P99            time.Duration
}

// LoadFigures is the users' load over a stretch of time, in requests a second: Offered counts
// first attempts (what the users asked for), Retries the retries sent; Answered, Refused and
// Failed count every request, retries included. P99 is of the answered ones.
type LoadFigures struct {
	Offered, Retries, Answered, Refused, Failed float64
	P99                                         time.Duration
}

// SendFigures is the account of every send.
type SendFigures struct {
	Attempted, Acknowledged int
	// Retried: acknowledged after at least one failed attempt.
	Retried int
	// Unacknowledged: never answered before the run ended; StoredUnanswered of them are
	// stored (once each).
	Unacknowledged, StoredUnanswered int
	// Stored: acknowledged and found at their seq with their content. Lost: acknowledged and
	// not found so. Duplicated: stored at more than one seq.
	Stored, Lost, Duplicated int
}

// FaultFigures is one injected fault and what it cost.
type FaultFigures struct {
	Kind   string
	Target string
	// At is when it began, from the start of the load; Down how long until the part was
	// back (answering again).
	At, Down time.Duration
	// Failures counts, by code, requests sent from the fault until the next one (or the end)
	// that failed; Recovered is the time from the fault to the last of them.
	Failures  map[string]int
	Recovered time.Duration
	// Refusals counts, by code, the requests refused in the same stretch: the gateway asking
	// to come back later is not a failure, and does not make the recovery longer.
	Refusals map[string]int
	Err      string
}

// InstanceFigures is one gateway's process figures.
type InstanceFigures struct {
	Name                string
	Before, Peak, After processStats
	Restarts            int
}

// Print writes the report as a user reads it.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\nmsggate load and faults: %d users × %d devices on %d gateways, %s, seed %d\n\n",
		r.Users, devicesPerUser, instances, r.Duration, r.Seed)
	fmt.Fprintf(w, "%-18s %9s %8s %7s %8s %9s %9s\n", "operation", "ok", "refused", "failed", "req/s", "p50", "p99")
	for _, o := range r.Ops {
		fmt.Fprintf(w, "%-18s %9d %8d %7d %8.1f %9s %9s\n", o.Name, o.OK, o.Refused, o.Failed, o.PerSecond, ms(o.P50), ms(o.P99))
	}
	l := r.Load
	fmt.Fprintf(w, "\nload (think %s): offered %.1f req/s and %.1f retries/s; answered %.1f req/s, refused %.1f req/s, failed %.1f req/s, p99 of answered %s\n",
		r.Think, l.Offered, l.Retries, l.Answered, l.Refused, l.Failed, ms(l.P99))
	rt := r.Retries
	fmt.Fprintf(w, "retry budgets, load and drain: %d first attempts, %d retries (%.1f%%), %d times a retry waited for the budget\n",
		rt.FirstAttempts, rt.Retries, 100*float64(rt.Retries)/float64(max(rt.FirstAttempts, 1)), rt.Held)
	fmt.Fprintf(w, "devices: %d connection attempts refused; failed: %s\n", r.DeviceRefusals, codes(r.DeviceFailures))
	fmt.Fprintf(w, "requests answered INTERNAL: %d\n", r.Internal)
	s := r.Sends
	fmt.Fprintf(w, "\nsends: %d attempted, %d acknowledged (%d after a retry), %d unanswered (%d of them stored)\n",
		s.Attempted, s.Acknowledged, s.Retried, s.Unacknowledged, s.StoredUnanswered)
	fmt.Fprintf(w, "store: %d acknowledged sends stored at their seq with their content, %d lost, %d duplicated\n",
		s.Stored, s.Lost, s.Duplicated)
	fmt.Fprintf(w, "replicas: %d of %d devices equal the server's state\n", r.ReplicasConverged, r.Devices)
	fmt.Fprintf(w, "broken promises in answers and replicas: %d\n", r.Violated)

	fmt.Fprintf(w, "\n%-14s %-10s %8s %8s %10s  %s\n", "fault", "target", "at", "down", "recovered", "failed requests by code; refused")
	fmt.Fprintf(w, "%-14s %-10s %8s %8s %10s  %s; %s\n", "(none yet)", "", "", "", "", codes(r.FailuresOutsideFaults), codes(r.RefusalsOutsideFaults))
	for _, f := range r.Faults {
		rec := ms(f.Recovered)
		if f.Err != "" {
			rec = "error: " + f.Err
		}
		fmt.Fprintf(w, "%-14s %-10s %8s %8s %10s  %s; %s\n", f.Kind, f.Target, secs(f.At), ms(f.Down), rec, codes(f.Failures), codes(f.Refusals))
	}

	for _, c := range slices.Sorted(maps.Keys(r.FailureExamples)) {
		fmt.Fprintf(w, "  %s, first seen: %.160s\n", c, r.FailureExamples[c])
	}

	fmt.Fprintf(w, "\n%-10s %24s %24s %24s  %s\n", "instance", "before", "peak", "after", "(goroutines, heap in use, RSS)")
	for _, in := range r.Instances {
		note := ""
		if in.Restarts > 0 {
			note = fmt.Sprintf("  restarted %d×: after is the new process", in.Restarts)
		}
		fmt.Fprintf(w, "%-10s %24s %24s %24s%s\n", in.Name, in.Before, in.Peak, in.After, note)
	}
	for _, v := range r.Violations {
		fmt.Fprintln(w, "  violation:", v)
	}
	for _, d := range r.ReplicaDiffs {
		fmt.Fprintln(w, "  replica:", d)
	}
	if len(r.Failed) == 0 {
		fmt.Fprintln(w, "\nevery check passed")
	} else {
		fmt.Fprintln(w, "\nFAILED:", strings.Join(r.Failed, "; "))
	}
}

func (s processStats) String() string {
	if s == (processStats{}) {
		return "-"
	}
	return fmt.Sprintf("%.0f, %.1f MiB, %.1f MiB", s.Goroutines, s.HeapBytes/(1<<20), s.RSSBytes/(1<<20))
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func codes(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}
