package loadfault

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// failure is one request that failed, when its failure was seen and why.
type failure struct {
	at   time.Time
	op   string
	code string
}

// opStats is what the run saw of one operation.
type opStats struct {
	ok        int
	failed    int
	latencies []time.Duration // of the successful requests
}

// recorder collects every request's outcome and every broken promise, from all goroutines.
type recorder struct {
	mu         sync.Mutex
	ops        map[string]*opStats
	failures   []failure
	violations []string
	violated   int
	// examples holds the first error message seen for each failure code.
	examples map[string]string
}

// maxViolationsKept bounds the violations kept word for word; all are counted.
const maxViolationsKept = 50

func newRecorder() *recorder {
	return &recorder{ops: map[string]*opStats{}, examples: map[string]string{}}
}

// record notes one request of op sent at began, failed with code and err ("" and nil when it
// succeeded). A failure counts when it is seen: a request cut by a fault belongs to the fault.
func (r *recorder) record(op string, began time.Time, code string, err error) {
	now := time.Now()
	took := now.Sub(began)
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.ops[op]
	if st == nil {
		st = &opStats{}
		r.ops[op] = st
	}
	if code == "" {
		st.ok++
		st.latencies = append(st.latencies, took)
		return
	}
	st.failed++
	r.failures = append(r.failures, failure{at: now, op: op, code: code})
	if _, ok := r.examples[code]; !ok && err != nil {
		r.examples[code] = op + ": " + err.Error()
	}
}

// violate notes a broken promise: a wrong answer, a lost message, a counter going back.
func (r *recorder) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violated++
	if len(r.violations) < maxViolationsKept {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

// totals returns the requests that succeeded and failed so far.
func (r *recorder) totals() (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.ops {
		ok += st.ok
		failed += st.failed
	}
	return ok, failed
}

// opFigures summarises each operation over elapsed, by name.
func (r *recorder) opFigures(elapsed time.Duration) []OpFigures {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []OpFigures
	for name, st := range r.ops {
		lat := slices.Clone(st.latencies)
		slices.Sort(lat)
		f := OpFigures{Name: name, OK: st.ok, Failed: st.failed, PerSecond: float64(st.ok) / elapsed.Seconds()}
		if len(lat) > 0 {
			f.P50 = lat[len(lat)/2]
			f.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b OpFigures) int { return b.OK - a.OK })
	return out
}

// failuresBetween counts the failures seen in [from, to) by code, and returns the last one's
// time (zero if none).
func (r *recorder) failuresBetween(from, to time.Time) (map[string]int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	var last time.Time
	for _, f := range r.failures {
		if f.at.Before(from) || !f.at.Before(to) {
			continue
		}
		counts[f.code]++
		if f.at.After(last) {
			last = f.at
		}
	}
	return counts, last
}
