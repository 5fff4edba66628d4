package loadfault

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// outcome is how one request ended.
type outcome int

const (
	answered outcome = iota
	// refused: the gateway asked to come back later (503, 429, a retry hint): nothing was
	// done, and the harness counts it apart from failures; under overload it is the
	// gateway doing its job.
	refused
	failed
)

// request is one request of the load as the recorder keeps it.
type request struct {
	began, at time.Time // sent, and answered (or given up)
	op        string
	code      string
	outcome   outcome
	first     bool // a first attempt, not a retry
}

// opStats is what the run saw of one operation.
type opStats struct {
	ok, refused, failed int
	latencies           []time.Duration // of the answered requests
}

// recorder collects every request's outcome and every broken promise, from all goroutines.
type recorder struct {
	mu         sync.Mutex
	ops        map[string]*opStats
	requests   []request
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

// record notes one request of op sent at began (first: not a retry) and its reply. A
// refusal or failure counts when it is seen: a request cut by a fault belongs to the fault.
func (r *recorder) record(op string, began time.Time, first bool, rep reply, err error) {
	now := time.Now()
	req := request{began: began, at: now, op: op, code: rep.code, first: first}
	switch {
	case rep.code == "":
		req.outcome = answered
	case rep.refused():
		req.outcome = refused
	default:
		req.outcome = failed
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	st := r.ops[op]
	if st == nil {
		st = &opStats{}
		r.ops[op] = st
	}
	switch req.outcome {
	case answered:
		st.ok++
		st.latencies = append(st.latencies, now.Sub(began))
		return
	case refused:
		st.refused++
	case failed:
		st.failed++
	}
	if _, ok := r.examples[rep.code]; !ok && err != nil {
		r.examples[rep.code] = op + ": " + err.Error()
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

// totals returns the requests answered, refused and failed so far.
func (r *recorder) totals() (ok, refusedN, failedN int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.ops {
		ok += st.ok
		refusedN += st.refused
		failedN += st.failed
	}
	return ok, refusedN, failedN
}

// opFigures summarises each operation over elapsed, by name.
func (r *recorder) opFigures(elapsed time.Duration) []OpFigures {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []OpFigures
	for name, st := range r.ops {
		f := OpFigures{Name: name, OK: st.ok, Refused: st.refused, Failed: st.failed, PerSecond: float64(st.ok) / elapsed.Seconds()}
		f.P50, f.P99 = percentiles(st.latencies)
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b OpFigures) int { return b.OK - a.OK })
	return out
}

// percentiles returns the median and the 99th percentile of lat (zero when empty).
func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	lat = slices.Clone(lat)
	slices.Sort(lat)
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// failuresBetween counts the requests that failed and those refused, seen in [from, to), by
// code, and returns the last failure's time (zero if none): refusals are not what a fault
// broke, so they do not make its recovery longer.
func (r *recorder) failuresBetween(from, to time.Time) (failures, refusals map[string]int, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	failures, refusals = map[string]int{}, map[string]int{}
	for _, q := range r.requests {
		if q.outcome == answered || q.at.Before(from) || !q.at.Before(to) {
			continue
		}
		if q.outcome == refused {
			refusals[q.code]++
			continue
		}
		failures[q.code]++
		if q.at.After(last) {
			last = q.at
		}
	}
	return failures, refusals, last
}

// codeCount counts the failed requests of the whole run with code.
func (r *recorder) codeCount(code string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.requests {
		if q.outcome == failed && q.code == code {
			n++
		}
	}
	return n
}

// window sums up the requests of [from, to): first attempts sent in it (the offered load) and
// retries sent in it, and requests answered, refused and failed in it, with the answered ones' 99th percentile.
func (r *recorder) window(from, to time.Time) LoadFigures {
	r.mu.Lock()
	defer r.mu.Unlock()
	secs := to.Sub(from).Seconds()
	var offered, retries, ok, ref, fail int
	var lat []time.Duration
	for _, q := range r.requests {
		if !q.began.Before(from) && q.began.Before(to) {
			if q.first {
				offered++
			} else {
				retries++
			}
		}
		if q.at.Before(from) || !q.at.Before(to) {
			continue
		}
		switch q.outcome {
		case answered:
			ok++
			lat = append(lat, q.at.Sub(q.began))
		case refused:
			ref++
		case failed:
			fail++
		}
	}
	f := LoadFigures{Offered: float64(offered) / secs, Retries: float64(retries) / secs, Answered: float64(ok) / secs,
		Refused: float64(ref) / secs, Failed: float64(fail) / secs}
	_, f.P99 = percentiles(lat)
	return f
}
