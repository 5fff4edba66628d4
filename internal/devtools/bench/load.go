package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// target is one endpoint under load: a URL, the request body it is sent and its headers.
type target struct {
	url   string
	body  []byte
	token string
}

// result is what a load run measured.
type result struct {
	requests int
	errors   int
	elapsed  time.Duration
	// latencies of the successful requests, sorted.
	latencies []time.Duration
}

func (r result) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// percentile returns the latency below which p (0..1) of the requests finished.
func (r result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(p * float64(len(r.latencies)-1))
	return r.latencies[i]
}

// merge adds another run of the same target.
func (r result) merge(o result) result {
	out := result{requests: r.requests + o.requests, errors: r.errors + o.errors, elapsed: r.elapsed + o.elapsed}
	out.latencies = append(append(out.latencies, r.latencies...), o.latencies...)
	slices.Sort(out.latencies)
	return out
}

// drive sends t's request from concurrency workers, each waiting for its answer before the
// next, for d. A request that fails, answers anything but 200 or answers GraphQL errors
// counts as an error. Requests
// in flight when d ends are let finish (and counted), so the handler never sees a client leave.
func drive(ctx context.Context, client *http.Client, t target, concurrency int, d time.Duration) result {
	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var own result
			var body bytes.Buffer
			for ctx.Err() == nil && time.Now().Before(deadline) {
				began := time.Now()
				if err := roundTrip(ctx, client, t, &body); err != nil {
					own.errors++
					continue
				}
				own.requests++
				own.latencies = append(own.latencies, time.Since(began))
			}
			mu.Lock()
			total.requests += own.requests
			total.errors += own.errors
			total.latencies = append(total.latencies, own.latencies...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	slices.Sort(total.latencies)
	return total
}

// errorsMember is how a GraphQL answer with errors starts them.
var errorsMember = []byte(`"errors":`)

// roundTrip sends one request and reads the whole answer into body: an error when the request
// fails or the answer is not a 200 without GraphQL errors.
func roundTrip(ctx context.Context, client *http.Client, t target, body *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body.Reset()
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if bytes.Contains(body.Bytes(), errorsMember) {
		return fmt.Errorf("GraphQL errors: %.200s", body.Bytes())
	}
	return nil
}

// fetch sends one request and returns its answer's body.
func fetch(ctx context.Context, client *http.Client, t target) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return body, nil
}

// newClient returns an HTTP client that keeps a connection per worker open.
func newClient(concurrency int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = concurrency * 2
	tr.MaxIdleConnsPerHost = concurrency * 2
	tr.DisableCompression = true
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// pairSlot is how long the two handlers of drivePairs are driven together in one pair.
const pairSlot = time.Second

// pairs are the ratios of drivePairs' pairs, the first handler's rate over the second's.
type pairs []float64

func (p pairs) quantile(q float64) float64 {
	if len(p) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(p))
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

func (p pairs) median() float64 {
	if len(p) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(p))
	if n := len(sorted); n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return sorted[len(sorted)/2]
}

// drivePairs drives a and b at once, half the clients each, n times for pairSlot, and
// returns each handler's total and the ratio of their rates in each pair. On a shared
// machine whose load moves within a second, two handlers driven one after the other see
// different machines, and two runs of a few seconds each differ by more than a few percent
// however alike the handlers; driven at once they share every burst of load, and the median
// of many pairs leaves out the pairs a burst fell on unevenly.
func drivePairs(ctx context.Context, client *http.Client, a, b target, concurrency, n int) (ra, rb result, ratios pairs) {
	half := max(1, concurrency/2)
	for range n {
		var x, y result
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); x = drive(ctx, client, a, half, pairSlot) }()
		go func() { defer wg.Done(); y = drive(ctx, client, b, half, pairSlot) }()
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		ra, rb = ra.merge(x), rb.merge(y)
		if y.perSecond() > 0 {
			ratios = append(ratios, x.perSecond()/y.perSecond())
		}
	}
	return ra, rb, ratios
}
