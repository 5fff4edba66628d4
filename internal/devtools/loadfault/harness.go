package loadfault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/syncclient"
)

// ErrChecksFailed is returned with the report when a check of the run failed.
var ErrChecksFailed = errors.New("the load-and-fault run failed its checks")

// Time the run allows after the load for what is still under way.
const (
	drainFor     = 60 * time.Second // sends still being retried
	convergeFor  = 60 * time.Second // devices catching up
	settleBefore = 5 * time.Second  // before the "after" figures are read
)

// Run starts the parts, drives the load with its faults, checks the outcome and returns the
// report. The error is ErrChecksFailed when the run completed and a check failed, or what
// kept it from completing.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	out := o.Out
	rng := mrand.New(mrand.NewSource(o.Seed))
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "msggate-loadfault-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	o, err := o.withGateway()
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "starting redis-server, FerretDB and %d gateways under %s (seed %d)...\n", instances, o.Dir, o.Seed)
	for _, sub := range []string{"redis", "store"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	redisServer, err := testenv.StartRedisServer(filepath.Join(o.Dir, "redis"))
	if err != nil {
		return nil, err
	}
	defer redisServer.Stop()
	storeServer, err := testenv.StartFerretDBServer(filepath.Join(o.Dir, "store"))
	if err != nil {
		return nil, err
	}
	defer storeServer.Stop()

	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	env := append([]string{gateway.EnvJWTSecret + "=" + hex.EncodeToString(secret)}, o.GatewayEnv...)
	p := &parts{redis: redisServer, store: storeServer, restarts: make([]int, instances)}
	for i := range instances {
		g, err := newGatewayProcess(fmt.Sprintf("gateway-%d", i+1), o.Dir, o.Gateway, env, storeServer.URI(), redisServer.URL())
		if err != nil {
			return nil, err
		}
		if err := g.start(ctx); err != nil {
			return nil, err
		}
		defer g.stop(10 * time.Second)
		p.gateways = append(p.gateways, g)
	}
	// Once the gateways have made their collections, index _id as msggate's embedded store has it.
	for _, g := range p.gateways {
		if err := g.waitReady(ctx, time.Minute); err != nil {
			return nil, err
		}
	}
	if err := storeServer.IndexIDs(chunkstore.DefaultDatabase); err != nil {
		return nil, err
	}
	urls := make([]string, instances)
	for i, g := range p.gateways {
		urls[i] = g.URL()
	}

	users, convs := buildUsers(o.Users)
	hexSecret := []byte(hex.EncodeToString(secret))
	for _, u := range users {
		if u.token, err = auth.Issue(hexSecret, u.id, false, 24*time.Hour, time.Now()); err != nil {
			return nil, err
		}
	}
	gql := newGraphQLClient()
	if err := createGroups(ctx, gql, urls[0], hexSecret, convs); err != nil {
		return nil, err
	}

	sampler := newStatsSampler(p.gateways)
	sampler.sample(ctx, gql.http, func(i int, st processStats) { sampler.figures[i].Before = st })

	// Devices: two per user, one on each instance, live until the checks are done.
	devClient := &http.Client{Transport: gql.http.Transport, Timeout: 30 * time.Second}
	rec := newRecorder()
	var devices []*device
	for _, u := range users {
		for d := range devicesPerUser {
			name := fmt.Sprintf("%s/device-%d", u.id, d+1)
			c, err := syncclient.New(urls[d%instances], u.token, syncclient.Options{
				// A phone or a tab: the conversation list and what arrives, history on demand.
				HTTPClient: devClient,
				OnApply: func(a syncclient.Applied) {
					if err := syncclient.CheckInvariants(a); err != nil {
						rec.violate("%s: %v", name, err)
					}
				},
			})
			if err != nil {
				return nil, err
			}
			devices = append(devices, &device{name: name, user: u, url: urls[d%instances], client: c})
		}
	}
	devCtx, stopDevices := context.WithCancel(ctx)
	defer stopDevices()
	var devWG sync.WaitGroup
	for _, d := range devices {
		devWG.Add(1)
		go func() {
			defer devWG.Done()
			_ = d.client.Run(devCtx) // it reconnects by itself until devCtx ends
		}()
	}

	// The devices come online before the clock starts, as they would be on a running system.
	fmt.Fprintf(out, "connecting %d devices...\n", len(devices))
	// Two minutes: a gateway shedding the connection storm paces the devices (1013, retry hints)
	// within their retry budgets.
	if err := waitOnline(ctx, devices, 2*time.Minute); err != nil {
		return nil, err
	}

	// The load, the faults and the sampler.
	fmt.Fprintf(out, "load: %d users, %d devices, %s, think time %s\n", o.Users, len(devices), o.Duration, o.Think)
	start := time.Now()
	loadCtx, endLoad := context.WithTimeout(ctx, o.Duration)
	defer endLoad()
	drainCtx, endDrain := context.WithTimeout(ctx, o.Duration+drainFor)
	defer endDrain()
	sends := newSendLedger()
	var workers sync.WaitGroup
	var workerList []*worker
	for i, u := range users {
		w := &worker{u: u, rng: mrand.New(mrand.NewSource(o.Seed + int64(i) + 1)), instances: urls,
			client: gql, rec: rec, sends: sends, think: o.Think, lastRead: map[string]int64{}}
		w.budget, w.backoff = newWorkerRetries()
		workerList = append(workerList, w)
		workers.Add(1)
		go func() {
			defer workers.Done()
			w.run(loadCtx, drainCtx)
		}()
	}
	plan := planFaults(rng, o.FaultRounds, o.Duration)
	faults := make([]FaultFigures, len(plan))
	faultStarts := make([]time.Time, len(plan))
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		for i, f := range plan {
			if !sleepCtx(loadCtx, time.Until(start.Add(f.at))) {
				return
			}
			faultStarts[i] = time.Now()
			fmt.Fprintf(out, "  %5.1fs  fault: %s\n", time.Since(start).Seconds(), f.kind)
			target, down, err := p.inject(loadCtx, rng, f.kind)
			faults[i] = FaultFigures{Kind: f.kind, Target: target, At: faultStarts[i].Sub(start), Down: down}
			if err != nil {
				faults[i].Err = err.Error()
				fmt.Fprintf(out, "  %5.1fs  %s did not come back: %v\n", time.Since(start).Seconds(), target, err)
				return
			}
			fmt.Fprintf(out, "  %5.1fs  %s back after %s\n", time.Since(start).Seconds(), target, ms(down))
		}
	}()
	var sampling atomic.Bool
	sampling.Store(true)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 1; sampling.Load(); n++ {
			select {
			case <-drainCtx.Done():
				return
			case <-tick.C:
			}
			sampler.sample(ctx, gql.http, sampler.peak)
			if n%5 == 0 && loadCtx.Err() == nil {
				ok, refused, failed := rec.totals()
				fmt.Fprintf(out, "  %5.1fs  %d requests answered, %d refused, %d failed\n", time.Since(start).Seconds(), ok, refused, failed)
			}
		}
	}()
	<-loadCtx.Done()
	fmt.Fprintf(out, "load done after %s; waiting for sends still being retried...\n", time.Since(start).Round(time.Millisecond))
	workers.Wait()
	faultsDone.Wait()
	loadEnd := time.Now()
	sampling.Store(false)
	<-samplerDone
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	report := &Report{Seed: o.Seed, Duration: o.Duration, Users: o.Users, Devices: len(devices), Think: o.Think}
	report.Ops = rec.opFigures(o.Duration)
	report.Load = rec.window(start, start.Add(o.Duration))
	for _, w := range workerList {
		st := w.budget.Stats()
		report.Retries.FirstAttempts += st.FirstAttempts
		report.Retries.Retries += st.Retries
		report.Retries.Held += st.Held
	}
	firstFault := loadEnd
	if len(faultStarts) > 0 && !faultStarts[0].IsZero() {
		firstFault = faultStarts[0]
	}
	report.FailuresOutsideFaults, report.RefusalsOutsideFaults, _ = rec.failuresBetween(start, firstFault)
	for i := range faults {
		if faultStarts[i].IsZero() {
			continue
		}
		to := loadEnd
		if i+1 < len(faultStarts) && !faultStarts[i+1].IsZero() {
			to = faultStarts[i+1]
		}
		var last time.Time
		faults[i].Failures, faults[i].Refusals, last = rec.failuresBetween(faultStarts[i], to)
		if !last.IsZero() {
			faults[i].Recovered = last.Sub(faultStarts[i])
		}
		report.Faults = append(report.Faults, faults[i])
	}

	fmt.Fprintf(out, "checking %d device replicas against the server's state (up to %s)...\n", len(devices), convergeFor)
	report.ReplicasConverged, report.ReplicaDiffs, err = verifyReplicas(ctx, devices, devClient, convergeFor)
	if err != nil {
		return nil, err
	}
	stopDevices()
	devWG.Wait()
	report.DeviceFailures = map[string]int{}
	for _, d := range devices {
		refused, failed := d.client.Outcomes()
		report.DeviceRefusals += refused
		for code, n := range failed {
			report.DeviceFailures[code] += n
		}
	}
	report.Internal = rec.codeCount("INTERNAL") + report.DeviceFailures["INTERNAL"]
	fmt.Fprintln(out, "checking the store against every send...")
	store, err := connectStore(ctx, storeServer.URI())
	if err != nil {
		return nil, err
	}
	defer store.Close(context.WithoutCancel(ctx))
	if report.Sends, err = verifyStore(ctx, store, convs, sends, rec); err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	gql.http.CloseIdleConnections()
	sleepCtx(ctx, settleBefore)
	sampler.sample(ctx, gql.http, func(i int, st processStats) { sampler.figures[i].After = st })
	for i := range sampler.figures {
		sampler.figures[i].Restarts = p.restarts[i]
	}
	report.Instances = sampler.figures

	rec.mu.Lock()
	report.Violations, report.Violated = rec.violations, rec.violated
	report.FailureExamples = rec.examples
	rec.mu.Unlock()
	report.Failed = judge(report)
	report.Print(out)
	if len(report.Failed) > 0 {
		return report, ErrChecksFailed
	}
	return report, nil
}

// judge lists the checks the report fails.
func judge(r *Report) []string {
	var failed []string
	s := r.Sends
	if s.Lost > 0 {
		failed = append(failed, fmt.Sprintf("%d acknowledged sends lost", s.Lost))
	}
	if s.Duplicated > 0 {
		failed = append(failed, fmt.Sprintf("%d sends stored twice", s.Duplicated))
	}
	if s.Acknowledged == 0 {
		failed = append(failed, "no send was acknowledged")
	}
	if r.ReplicasConverged != r.Devices {
		failed = append(failed, fmt.Sprintf("%d of %d replicas differ from the server", r.Devices-r.ReplicasConverged, r.Devices))
	}
	if r.Violated > 0 {
		failed = append(failed, fmt.Sprintf("%d broken promises", r.Violated))
	}
	// INTERNAL is a bug of msggate's, whatever the load: overload and faults must be answered
	// as refusals or UNAVAILABLE.
	if r.Internal > 0 {
		failed = append(failed, fmt.Sprintf("%d requests answered INTERNAL", r.Internal))
	}
	for _, f := range r.Faults {
		if f.Err != "" {
			failed = append(failed, fmt.Sprintf("%s: %s did not come back", f.Kind, f.Target))
		}
	}
	for _, in := range r.Instances {
		// Goroutines come back near where they started once the clients are gone: what the
		// load started has ended.
		if in.After.Goroutines > in.Before.Goroutines*1.5+20 {
			failed = append(failed, fmt.Sprintf("%s holds %.0f goroutines after the load, %.0f before", in.Name, in.After.Goroutines, in.Before.Goroutines))
		}
	}
	return failed
}

// createGroups creates the load's groups through the gateway, as an operator would.
func createGroups(ctx context.Context, gql *graphQLClient, url string, secret []byte, convs []*conversation) error {
	admin, err := auth.Issue(secret, "loadfault-admin", true, time.Hour, time.Now())
	if err != nil {
		return err
	}
	for _, c := range convs {
		if c.groupID == "" {
			continue
		}
		var members []map[string]any
		for i, m := range c.members {
			role := "MEMBER"
			if i == 0 {
				role = "OWNER"
			}
			members = append(members, map[string]any{"userID": m, "role": role})
		}
		var r reply
		backoff := syncclient.Backoff{Min: retryMin, Max: retryMax}
		for attempt := 0; ; attempt++ {
			r, err = gql.call(ctx, url, admin, `mutation($g: ID!, $m: [GroupMemberInput!]!) { upsertGroup(groupID: $g, members: $m) { id } }`,
				map[string]any{"g": c.groupID, "m": members}, nil)
			// A gateway that is starting may refuse for a moment: it says when to come back.
			if !r.refused() || attempt == 20 || !sleepCtx(ctx, backoff.Next(r.retryAfter)) {
				break
			}
		}
		if r.code != "" {
			return fmt.Errorf("creating group %s: %s: %w", c.groupID, r.code, err)
		}
	}
	return nil
}

// statsSampler reads the gateways' process figures.
type statsSampler struct {
	gateways []*gatewayProcess
	mu       sync.Mutex
	figures  []InstanceFigures
}

func newStatsSampler(gws []*gatewayProcess) *statsSampler {
	s := &statsSampler{gateways: gws}
	for _, g := range gws {
		s.figures = append(s.figures, InstanceFigures{Name: g.name})
	}
	return s
}

// sample reads each gateway that answers and hands its figures to keep.
func (s *statsSampler) sample(ctx context.Context, client *http.Client, keep func(int, processStats)) {
	for i, g := range s.gateways {
		st, err := g.scrapeStats(ctx, client)
		if err != nil {
			continue // down for a fault
		}
		s.mu.Lock()
		keep(i, st)
		s.mu.Unlock()
	}
}

// peak keeps the highest of each figure; s.mu is held.
func (s *statsSampler) peak(i int, st processStats) {
	p := &s.figures[i].Peak
	p.Goroutines = max(p.Goroutines, st.Goroutines)
	p.HeapBytes = max(p.HeapBytes, st.HeapBytes)
	p.RSSBytes = max(p.RSSBytes, st.RSSBytes)
}

// waitOnline waits until every device has read its state summary.
func waitOnline(ctx context.Context, devices []*device, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		offline := 0
		for _, d := range devices {
			if d.client.Token() == "" {
				offline++
			}
		}
		if offline == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d devices did not come online within %s", offline, len(devices), within)
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// connectStore opens the store for the checks, retrying while a FerretDB that has just been
// restarted or is still busy refuses.
func connectStore(ctx context.Context, uri string) (*chunkstore.Store, error) {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		var s *chunkstore.Store
		if s, err = chunkstore.Connect(ctx, chunkstore.Options{URI: uri}); err == nil {
			return s, nil
		}
		if !sleepCtx(ctx, time.Duration(attempt+1)*time.Second) {
			break
		}
	}
	return nil, fmt.Errorf("opening the store for the checks: %w", err)
}
