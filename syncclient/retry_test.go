package syncclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Ensure that under constant failure (every attempt fails and is retried as long as the
// budget allows) retries stay within the configured fraction of the first attempts plus the
// burst, and that the floor adds its tokens a second and no more.
func TestRetryBudgetBoundsRetriesUnderConstantFailure(t *testing.T) {
	for _, ratio := range []float64{0.1, 0.2} {
		const burst, floor, first = 3, 0.1, 1000
		now := time.Unix(1000, 0)
		b := NewRetryBudget(ratio, floor, burst)
		b.now = func() time.Time { return now }
		retries := 0
		for range first {
			b.Deposit()
			for {
				ok, wait := b.TryRetry()
				if !ok {
					if wait <= 0 || wait > time.Duration(float64(time.Second)/floor) {
						t.Fatalf("ratio %v: an empty budget says wait %v, want (0, %v]", ratio, wait, time.Duration(float64(time.Second)/floor))
					}
					break
				}
				retries++
			}
		}
		// At most the burst it started with plus ratio per first attempt; and the budget does
		// allow that much (it is a bound, not a ban).
		most := burst + int(ratio*first+1e-9)
		if retries > most || retries < most-1 {
			t.Errorf("ratio %v: %d retries for %d failing first attempts, want %d (burst %d + %v each)", ratio, retries, first, most, burst, ratio)
		}
		if st := b.Stats(); st.FirstAttempts != first || st.Retries != int64(retries) || st.Held != first {
			t.Errorf("ratio %v: stats %+v", ratio, st)
		}

		// With no first attempts, only the floor: 0.1 a second makes 3 retries in 30 s.
		now = now.Add(30 * time.Second)
		floorRetries := 0
		for {
			if ok, _ := b.TryRetry(); !ok {
				break
			}
			floorRetries++
		}
		if floorRetries != 3 {
			t.Errorf("ratio %v: %d retries from 30 s of floor, want 3", ratio, floorRetries)
		}
		// The bucket never holds more than the burst, however long it was idle.
		now = now.Add(time.Hour)
		held := 0
		for {
			if ok, _ := b.TryRetry(); !ok {
				break
			}
			held++
		}
		if held != burst {
			t.Errorf("ratio %v: %d retries after an idle hour, want the burst %d", ratio, held, burst)
		}
	}
}

// Ensure the backoff's waits lie within their bounds and honour a hint as a floor.
func TestBackoffBoundsAndHint(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	for i := range 50 {
		if w := b.Next(0); w < b.Min || w > b.Max {
			t.Fatalf("wait %d: %v outside [%v, %v]", i, w, b.Min, b.Max)
		}
	}
	for range 50 {
		if w := b.Next(time.Second); w < time.Second || w > 1500*time.Millisecond {
			t.Fatalf("with a 1 s hint: %v, want within [1 s, 1.5 s]", w)
		}
	}
	for reason, want := range map[string]time.Duration{
		"overloaded; retryAfterMs=1500": 1500 * time.Millisecond,
		"try again later: retry in 2s":  2 * time.Second,
		"store unavailable":             0,
	} {
		if got := hintInReason(reason); got != want {
			t.Errorf("hint in %q: %v, want %v", reason, got, want)
		}
	}
}

// requestTimes wraps a handler, refusing the first n requests of a kind with refuse and
// noting when each request arrived.
type requestTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (r *requestTimes) note() {
	r.mu.Lock()
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
}

func (r *requestTimes) gaps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(r.times); i++ {
		out = append(out, r.times[i].Sub(r.times[i-1]))
	}
	return out
}

// Ensure the client waits at least the gateway's Retry-After before asking again, though its
// own backoff would come back within milliseconds, and counts the answers as refusals: a 503
// whose GraphQL error has no retryAfterMs (the header is the hint), then a 429 whose
// retryAfterMs is finer than its header.
func TestRunWaitsAtLeastRetryAfter(t *testing.T) {
	f, _ := newFakeGateway(t)
	f.state = []Conversation{{ID: "si_me_you", Counters: Counters{MaxSeq: 0, MinSeq: 1}}}
	var seen requestTimes
	refusals := []func(http.ResponseWriter){
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"errors":[{"message":"overloaded","extensions":{"code":"UNAVAILABLE"}}],"data":null}`))
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"errors":[{"message":"too many requests","extensions":{"code":"LIMIT_EXCEEDED","limit":"rate","retryAfterMs":300}}],"data":null}`))
		},
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			seen.note()
			mu.Lock()
			var refuse func(http.ResponseWriter)
			if len(refusals) > 0 {
				refuse, refusals = refusals[0], refusals[1:]
			}
			mu.Unlock()
			if refuse != nil {
				refuse(w)
				return
			}
		}
		f.serve(w, r)
	}))
	t.Cleanup(srv.Close)

	c, err := New(srv.URL, "jwt", Options{ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return c.Token() != "" })
	gaps := seen.gaps()
	if len(gaps) < 2 {
		t.Fatalf("%d requests, want the two refused ones and the state summary", len(gaps)+1)
	}
	if gaps[0] < time.Second {
		t.Errorf("asked again %v after a 503 with Retry-After: 1, want at least 1 s", gaps[0])
	}
	if gaps[1] < 300*time.Millisecond {
		t.Errorf("asked again %v after a 429 with retryAfterMs 300, want at least 300 ms", gaps[1])
	}
	if refused, failed := c.Outcomes(); refused != 2 || len(failed) != 0 {
		t.Errorf("outcomes: %d refused, failed %v; want 2 refused and no failures", refused, failed)
	}
}

// Ensure a WebSocket closed with 1013 and a hint in its reason is reconnected no sooner than
// the hint, and counted as a refusal.
func TestRunHonoursTryAgainLater(t *testing.T) {
	f, _ := newFakeGateway(t)
	f.state = []Conversation{{ID: "si_me_you", Counters: Counters{MaxSeq: 0, MinSeq: 1}}}
	var dials requestTimes
	var mu sync.Mutex
	refuse := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			dials.note()
			mu.Lock()
			now := refuse > 0
			refuse--
			mu.Unlock()
			if now {
				conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
				if err == nil {
					_ = conn.Close(websocket.StatusTryAgainLater, "reconnect storm; retryAfterMs=400")
				}
				return
			}
		}
		f.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "jwt", Options{ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { dials.mu.Lock(); defer dials.mu.Unlock(); return len(dials.times) >= 3 })
	for i, g := range dials.gaps()[:2] {
		if g < 400*time.Millisecond {
			t.Errorf("reconnect %d came %v after a 1013 with retryAfterMs=400, want at least 400 ms", i+1, g)
		}
	}
	if refused, _ := c.Outcomes(); refused != 2 {
		t.Errorf("%d refusals counted, want 2", refused)
	}
}

// runUntil runs c until cond holds, then stops it; Run must end without an error.
func runUntil(t *testing.T, c *Client, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitUntil(t, cond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
