package loadfault

import (
	"context"
	"fmt"
	"math/rand"
	"time"
)

// The kinds of fault a run injects.
const (
	faultRedis   = "redis killed"
	faultGateway = "gateway killed"
	faultStore   = "store restart"
)

// downFor is how long a killed part stays down before it is started again.
const downFor = time.Second

// plannedFault is one fault of the schedule.
type plannedFault struct {
	kind string
	at   time.Duration // from the start of the load
}

// planFaults spreads rounds of each kind over the middle of the load (from 10% to 80% of it),
// in random order, at random moments within evenly spaced slots, so that two faults never
// overlap and the load has time to recover after the last one.
func planFaults(rng *rand.Rand, rounds int, load time.Duration) []plannedFault {
	var kinds []string
	for range max(rounds, 0) {
		kinds = append(kinds, faultRedis, faultGateway, faultStore)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	if len(kinds) == 0 {
		return nil
	}
	from, span := load/10, load*7/10
	slot := span / time.Duration(len(kinds))
	out := make([]plannedFault, len(kinds))
	for i, k := range kinds {
		jitter := time.Duration(rng.Int63n(int64(slot)/2 + 1))
		out[i] = plannedFault{kind: k, at: from + time.Duration(i)*slot + jitter}
	}
	return out
}

// parts is what faults act on.
type parts struct {
	redis interface {
		Stop()
		Restart() error
	}
	store interface {
		Stop()
		Restart() error
	}
	gateways []*gatewayProcess
	restarts []int // by gateway
}

// inject runs one fault and returns when the part is back: it reports how long it was down.
func (p *parts) inject(ctx context.Context, rng *rand.Rand, kind string) (target string, down time.Duration, err error) {
	began := time.Now()
	switch kind {
	case faultRedis:
		target = "redis"
		p.redis.Stop() // SIGKILL
		sleepCtx(ctx, downFor)
		err = p.redis.Restart()
	case faultStore:
		target = "ferretdb"
		p.store.Stop() // SIGTERM, then started again on its port and data
		sleepCtx(ctx, downFor)
		err = p.store.Restart()
	case faultGateway:
		i := rng.Intn(len(p.gateways))
		g := p.gateways[i]
		target = g.name
		g.kill()
		sleepCtx(ctx, downFor)
		err = g.start(context.WithoutCancel(ctx))
		p.restarts[i]++
	default:
		return "", 0, fmt.Errorf("unknown fault %q", kind)
	}
	return target, time.Since(began), err
}
