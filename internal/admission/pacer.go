package admission

import (
	"sync"
	"time"
)

// Pacer is a token bucket: it lets through rate events a second, burst at once after a quiet
// spell, and tells the others when to come back. The gateway paces new WebSocket connections
// with it, so that hundreds of devices reconnecting at once (after a gateway or Redis was
// lost) arrive over seconds instead of in one instant, each with a catch-up read.
type Pacer struct {
	rate  float64 // tokens a second
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// NewPacer returns a Pacer that starts full. A nil Pacer (rate <= 0) lets everything through.
func NewPacer(rate float64, burst int) *Pacer {
	if rate <= 0 {
		return nil
	}
	b := max(float64(burst), 1)
	return &Pacer{rate: rate, burst: b, tokens: b, last: time.Now()}
}

// Take takes a token, or reports how long until one is there.
func (p *Pacer) Take() (bool, time.Duration) {
	if p == nil {
		return true, 0
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	if p.tokens >= 1 {
		p.tokens--
		return true, 0
	}
	return false, time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
}
