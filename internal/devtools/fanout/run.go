package fanout

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/syncclient"
)

// GroupID is the group the bench makes and sends to.
const GroupID = "fanout"

// Time the run allows.
const (
	subscribedWithin = 10 * time.Minute // all subscriptions live on the gateways
	deliveredWithin  = 60 * time.Second // every message at every device, after the last send
	progressEvery    = 500              // devices between two progress lines
)

// memberID names member i (from 0): fan-0001, fan-0002, ...
func memberID(i int) string { return fmt.Sprintf("fan-%04d", i+1) }

// Run starts redis-server, the store and the gateways, makes the group, connects the devices
// all at once, sends the messages and returns the figures; it prints progress and the table
// to o.Out.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	out := o.Out
	switch {
	case o.Members > im.MaxGroupMembers:
		return nil, fmt.Errorf("fanout: a group of %d: a group has at most %d members (more devices than that are several devices of a member: -members)", o.Members, im.MaxGroupMembers)
	case o.Members > o.Devices:
		return nil, fmt.Errorf("fanout: %d members for %d devices: want at least one device a member", o.Members, o.Devices)
	case o.Store != StoreFerretDB && o.Store != StoreEmbedded:
		return nil, fmt.Errorf("fanout: store %q: want %s or %s", o.Store, StoreFerretDB, StoreEmbedded)
	case o.Store == StoreEmbedded && o.Instances != 1:
		return nil, fmt.Errorf("fanout: the embedded store belongs to one gateway process; %d instances need -store %s", o.Instances, StoreFerretDB)
	}
	if err := raiseFileLimit(o.Devices); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "msggate-fanout-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	if len(o.Command) == 0 {
		// This program is a tool, not the product: its gateways are msggate proper.
		bin, err := testenv.BuildGateway(o.Dir, out)
		if err != nil {
			return nil, err
		}
		o.Command = []string{bin}
	}

	fmt.Fprintf(out, "starting redis-server, the store (%s) and %d gateway(s) under %s...\n", o.Store, o.Instances, o.Dir)
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
	stats, err := cache.Dial(redisServer.URL(), cache.Options{})
	if err != nil {
		return nil, err
	}
	defer stats.Close()
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	hexSecret := hex.EncodeToString(secret)
	env := append([]string{gateway.EnvJWTSecret + "=" + hexSecret}, o.ChildEnv...)

	// The group, made as an operator makes one (msggate group), on the gateways' store and
	// Redis. The embedded store's files belong to one process at a time: the group is made
	// there before its gateway starts, as the operations guide says.
	members := make([]string, o.Members)
	for i := range members {
		members[i] = memberID(i)
	}
	makeGroup := func(storeFlags ...string) error {
		began := time.Now()
		args := append([]string{"group", "-redis-url", redisServer.URL(), "-id", GroupID,
			"-members", members[0] + ":owner," + strings.Join(members[1:], ",")}, storeFlags...)
		if err := runChild(ctx, filepath.Join(o.Dir, "group.log"), o.Command, env, args...); err != nil {
			return err
		}
		fmt.Fprintf(out, "group %s of %d members made in %s\n", GroupID, o.Members, time.Since(began).Round(time.Millisecond))
		return nil
	}
	var gws []*instance
	defer func() {
		for _, g := range gws {
			g.stop()
		}
	}()
	if o.Store == StoreEmbedded {
		const name = "gateway-1"
		if err := makeGroup("-data-dir", filepath.Join(o.Dir, name)); err != nil {
			return nil, err
		}
		g, err := startGateway(ctx, name, o.Dir, o.Command, env, "", redisServer.URL())
		if err != nil {
			return nil, err
		}
		gws = append(gws, g)
	} else {
		storeServer, err := testenv.StartFerretDBServer(filepath.Join(o.Dir, "store"))
		if err != nil {
			return nil, err
		}
		defer storeServer.Stop()
		for i := range o.Instances {
			g, err := startGateway(ctx, fmt.Sprintf("gateway-%d", i+1), o.Dir, o.Command, env, storeServer.URI(), redisServer.URL())
			if err != nil {
				return nil, err
			}
			gws = append(gws, g)
		}
		// Once the gateways have made their collections, index _id as msggate's embedded store has it.
		if err := storeServer.IndexIDs(chunkstore.DefaultDatabase); err != nil {
			return nil, err
		}
		if err := makeGroup("-mongo-uri", storeServer.URI(), "-data-dir", filepath.Join(o.Dir, "group")); err != nil {
			return nil, err
		}
	}
	conv, err := im.GroupConversationID(GroupID)
	if err != nil {
		return nil, err
	}

	httpClient := &http.Client{Timeout: 30 * time.Second}
	tokens := make([]string, o.Members)
	for i := range tokens {
		if tokens[i], err = auth.Issue([]byte(hexSecret), members[i], false, 24*time.Hour, time.Now()); err != nil {
			return nil, err
		}
	}
	// The devices, spread round-robin over the members and, apart, over the instances.
	newDevices := func() []*device {
		devices := make([]*device, o.Devices)
		for i := range devices {
			m := i % o.Members
			devices[i] = &device{user: members[m], token: tokens[m], url: gws[i%len(gws)].url, conv: conv, arrived: map[int64]time.Time{}}
		}
		return devices
	}
	if o.Restart {
		// One device a member: what Redis knows is per user.
		if err := connectBeforeRestart(ctx, out, httpClient, gws, newDevices()[:o.Members]); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "restarting the gateway(s)...\n")
		for i, g := range gws {
			g.stop()
			if gws[i], err = g.restart(ctx); err != nil {
				return nil, err
			}
		}
	}
	before, err := scrapeAll(ctx, httpClient, gws)
	if err != nil {
		return nil, err
	}
	devices := newDevices()
	devCtx, stopDevices := context.WithCancel(ctx)
	defer stopDevices()
	fmt.Fprintf(out, "connecting %d devices at once...\n", o.Devices)
	cpuBefore := cpuSample(gws)
	loadBefore := loadAverage()
	began := time.Now()
	st := startWatch{client: httpClient, gws: gws, before: before}
	st.start(ctx)
	if err := connectAll(devCtx, devices, func(n int) {
		if n%progressEvery == 0 || n == len(devices) {
			fmt.Fprintf(out, "  %d/%d connected (%s)\n", n, len(devices), time.Since(began).Round(time.Millisecond))
		}
	}); err != nil {
		st.stop()
		return nil, err
	}
	if err := waitSubscribed(ctx, out, httpClient, gws, before, o.Devices); err != nil {
		st.stop()
		return nil, err
	}
	liveAfter := time.Since(began)
	cpuLive := cpuSample(gws)
	loadLive := loadAverage()
	peak := st.stop()
	fmt.Fprintf(out, "all %d subscriptions live after %s\n", o.Devices, liveAfter.Round(time.Millisecond))
	started, err := scrapeAll(ctx, httpClient, gws)
	if err != nil {
		return nil, err
	}
	// A subscription starts by reading its streams' heads and the member's counters (from
	// MongoDB when Redis has not cached them yet): wait for that to end, so that neither the
	// idle figures nor the sends' carry it.
	if err := waitRedisQuiet(ctx, out, stats); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "idle for %s before reading the gateways' memory...\n", o.Settle)
	idle, err := settle(ctx, httpClient, gws, o.Settle)
	if err != nil {
		return nil, err
	}

	// The idle baseline: what Redis does with the devices connected and no message sent, over
	// the time the sends are planned to take.
	sendPhase := time.Duration(o.Messages) * o.Interval
	fmt.Fprintf(out, "measuring Redis idle for %s...\n", sendPhase)
	idleStart, err := readRedis(ctx, stats)
	if err != nil {
		return nil, err
	}
	idleBegan := time.Now()
	if !sleep(ctx, sendPhase) {
		return nil, ctx.Err()
	}
	idleEnd, err := readRedis(ctx, stats)
	if err != nil {
		return nil, err
	}
	idleTook := time.Since(idleBegan)

	// The sends, from the group's owner through the first instance.
	fmt.Fprintf(out, "sending %d messages, %s apart...\n", o.Messages, o.Interval)
	sendStart, err := readRedis(ctx, stats)
	if err != nil {
		return nil, err
	}
	sendBegan := time.Now()
	sends := make([]sent, 0, o.Messages)
	for i := range o.Messages {
		if i > 0 && !sleep(ctx, time.Until(sendBegan.Add(time.Duration(i)*o.Interval))) {
			return nil, ctx.Err()
		}
		s, err := send(ctx, httpClient, gws[0].url, devices[0].token, i)
		if err != nil {
			return nil, err
		}
		sends = append(sends, s)
	}
	delivered := waitDelivered(ctx, devices, sends, deliveredWithin)
	sendEnd, err := readRedis(ctx, stats)
	if err != nil {
		return nil, err
	}
	sendTook := time.Since(sendBegan)
	if !delivered {
		fmt.Fprintf(out, "not every device had every message %s after the last send\n", deliveredWithin)
	}

	r := &Report{Devices: o.Devices, Members: o.Members, Store: o.Store, Instances: o.Instances, Messages: o.Messages, Settle: o.Settle, Restart: o.Restart}
	r.redis(idleStart, idleEnd, idleTook, sendStart, sendEnd, sendTook)
	r.start(liveAfter, before, peak, started)
	r.startCPU(cpuBefore, cpuLive)
	r.LoadBefore, r.LoadLive = loadBefore, loadLive
	r.gateways(before, idle)
	r.deliveries(devices, sends)
	stopDevices()
	for _, d := range devices {
		d.closeNow()
	}
	r.Print(out)
	return r, nil
}

// connectBeforeRestart connects devices (one a member) in waves of RestartWave, each wave live before the
// next dials, and then closes them all: their users are then known to Redis as those of a
// gateway's devices are when it restarts.
func connectBeforeRestart(ctx context.Context, out io.Writer, client *http.Client, gws []*instance, devices []*device) error {
	fmt.Fprintf(out, "connecting %d devices in waves of %d before the restart...\n", len(devices), RestartWave)
	began := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for _, d := range devices {
			d.closeNow()
		}
	}()
	before, err := scrapeAll(ctx, client, gws)
	if err != nil {
		return err
	}
	for i := 0; i < len(devices); i += RestartWave {
		wave := devices[i:min(i+RestartWave, len(devices))]
		if err := connectAll(ctx, wave, func(int) {}); err != nil {
			return err
		}
		if err := waitSubscribed(ctx, io.Discard, client, gws, before, i+len(wave)); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "  all %d live in %s\n", len(devices), time.Since(began).Round(time.Millisecond))
	return nil
}

// cpuTimes is the CPU time used so far by each gateway and by this process (the devices'
// side of every connection).
type cpuTimes struct {
	gateways []time.Duration
	tool     time.Duration
}

// cpuSample reads the CPU time of gws and of this process; one that cannot be read counts 0.
func cpuSample(gws []*instance) cpuTimes {
	var c cpuTimes
	for _, g := range gws {
		d, _ := g.cpu()
		c.gateways = append(c.gateways, d)
	}
	c.tool, _ = processCPU(os.Getpid())
	return c
}

// raiseFileLimit makes room for the devices' connections in this process: its soft limit of
// open files up to the hard one (the gateways, which hold the other ends, are Go programs and
// do the same at start), or a clear error when even that is too few.
func raiseFileLimit(devices int) error {
	const spare = 256 // Redis, the store, logs and HTTP
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	need := uint64(devices + spare)
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("fanout: %d devices need %d open files, and this process may open at most %d (ulimit -Hn)", devices, need, lim.Max)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("fanout: raising the open-files limit to %d for %d devices: %w", lim.Max, devices, err)
	}
	return nil
}

// connectAll connects and subscribes every device, all at once as after a gateway restart
// (each retries what the gateway refuses for now, as a client would), telling progress the
// number connected after each.
func connectAll(ctx context.Context, devices []*device, progress func(int)) error {
	errs := make(chan error, len(devices))
	var mu sync.Mutex
	connected := 0
	var wg sync.WaitGroup
	for _, d := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.connect(ctx); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			connected++
			progress(connected)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	if err, failed := <-errs; failed {
		return fmt.Errorf("connecting %d devices: %d failed, the first with: %w", len(devices), len(errs)+1, err)
	}
	return nil
}

// startWatch samples the gateways while the devices start, for the goroutines they hold at
// their most.
type startWatch struct {
	client *http.Client
	gws    []*instance
	before []gatewayFigures

	cancel context.CancelFunc
	done   chan struct{}
	peak   float64 // the most goroutines, summed over the instances, less before
}

func (w *startWatch) start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		for sleep(ctx, 250*time.Millisecond) {
			now, err := scrapeAll(ctx, w.client, w.gws)
			if err != nil {
				continue // a gateway too busy to answer in time; the next sample will tell
			}
			sum := 0.0
			for i := range now {
				sum += now[i].Goroutines - w.before[i].Goroutines
			}
			w.peak = max(w.peak, sum)
		}
	}()
}

// stop ends the sampling and returns the peak goroutines.
func (w *startWatch) stop() float64 {
	w.cancel()
	<-w.done
	return w.peak
}

// waitSubscribed waits until the gateways stream live to want more subscriptions than before:
// a subscribe message is not acknowledged, and a message sent before its subscription caught
// up once (read its streams' heads, and its member's counters: from MongoDB, for a user
// Redis has not cached yet) would be measured from a device still starting.
func waitSubscribed(ctx context.Context, out io.Writer, client *http.Client, gws []*instance, before []gatewayFigures, want int) error {
	deadline := time.Now().Add(subscribedWithin)
	lastSaid := time.Now()
	for {
		now, err := scrapeAll(ctx, client, gws)
		if err != nil {
			return err
		}
		open, registered := 0, 0
		for i := range now {
			open += int(now[i].Live - before[i].Live)
			registered += int(now[i].Subscribers - before[i].Subscribers)
		}
		if open >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d subscriptions live after %s", open, want, subscribedWithin)
		}
		if time.Since(lastSaid) >= 5*time.Second {
			fmt.Fprintf(out, "  %d/%d subscriptions live (%d open)\n", open, want, registered)
			lastSaid = time.Now()
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// settleSample is how often the gateways are read while the devices settle.
const settleSample = 500 * time.Millisecond

// settle waits for d with the devices idle and returns each gateway's figures at their lowest
// over that time. The gateway cannot be told to collect garbage, and its heap in use only
// falls when it does: the lowest reading is the nearest to what the devices hold.
func settle(ctx context.Context, client *http.Client, gws []*instance, d time.Duration) ([]gatewayFigures, error) {
	var low []gatewayFigures
	end := time.Now().Add(d)
	for {
		if !sleep(ctx, min(settleSample, time.Until(end))) {
			return nil, ctx.Err()
		}
		now, err := scrapeAll(ctx, client, gws)
		if err != nil {
			return nil, err
		}
		if low == nil {
			low = now
		}
		for i := range now {
			low[i].HeapBytes = min(low[i].HeapBytes, now[i].HeapBytes)
			low[i].StackBytes = min(low[i].StackBytes, now[i].StackBytes)
			low[i].Goroutines = min(low[i].Goroutines, now[i].Goroutines)
			low[i].RSS = min(low[i].RSS, now[i].RSS)
		}
		if !time.Now().Before(end) {
			return low, nil
		}
	}
}

// sent is one message sent: when the send began and the seq it was stored at.
type sent struct {
	began time.Time
	seq   int64
}

const sendMutation = `mutation FanoutSend($in: SendMessageInput!) { sendMessage(input: $in) { conversationID seq } }`

// sendAttempts bounds the tries of one send the gateway refuses for now.
const sendAttempts = 10

// send sends message i to the group and returns when it began and its seq. A refusal (code
// UNAVAILABLE or LIMIT_EXCEEDED) is tried again after the gateway's hint with the same
// clientMsgID, so it is stored once; the delivery time still counts from the first try, as
// the sender's wait does.
func send(ctx context.Context, client *http.Client, url, token string, i int) (sent, error) {
	body, _ := json.Marshal(map[string]any{"query": sendMutation, "variables": map[string]any{"in": map[string]any{
		"groupID": GroupID, "contentType": 101, "content": fmt.Sprintf("fan-out message %d", i+1),
		"clientMsgID": fmt.Sprintf("fanout-%d-%d", time.Now().UnixNano(), i)}}})
	s := sent{began: time.Now()}
	backoff := syncclient.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 1; ; attempt++ {
		seq, retryAfter, err := sendOnce(ctx, client, url, token, body)
		if err == nil {
			s.seq = seq
			return s, nil
		}
		if retryAfter == 0 || attempt == sendAttempts {
			return s, fmt.Errorf("sending message %d: %w", i+1, err)
		}
		if !sleep(ctx, backoff.Next(retryAfter)) {
			return s, ctx.Err()
		}
	}
}

// sendOnce posts the mutation once. retryAfter is above zero when the gateway refused it for
// now.
func sendOnce(ctx context.Context, client *http.Client, url, token string, body []byte) (seq int64, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/query", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			SendMessage *struct {
				Seq int64 `json:"seq"`
			} `json:"sendMessage"`
		} `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code         string `json:"code"`
				RetryAfterMs int64  `json:"retryAfterMs"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if len(answer.Errors) > 0 {
		e := answer.Errors[0]
		if c := e.Extensions.Code; c == "UNAVAILABLE" || c == "LIMIT_EXCEEDED" {
			retryAfter = max(time.Duration(e.Extensions.RetryAfterMs)*time.Millisecond, time.Millisecond)
		}
		return 0, retryAfter, fmt.Errorf("%s (%s)", e.Message, e.Extensions.Code)
	}
	if answer.Data.SendMessage == nil {
		return 0, 0, fmt.Errorf("%s: no sendMessage in the answer", resp.Status)
	}
	return answer.Data.SendMessage.Seq, 0, nil
}

// waitDelivered waits until every device has every message, or within has passed since the
// last send; it reports whether all arrived (or will not: a device whose connection ended
// gets nothing more).
func waitDelivered(ctx context.Context, devices []*device, sends []sent, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		all := true
	check:
		for _, d := range devices {
			for _, s := range sends {
				if _, ok := d.arrival(s.seq); !ok && !d.gone() {
					all = false
					break check
				}
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) || !sleep(ctx, 50*time.Millisecond) {
			return false
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// quietRate is the Redis call rate below which the devices' start is over.
const quietRate = 50

// waitRedisQuiet waits, up to two minutes, until Redis runs fewer than quietRate calls a
// second, printing the rate while it is busy.
func waitRedisQuiet(ctx context.Context, out io.Writer, stats *cache.Cache) error {
	prev, err := readRedis(ctx, stats)
	if err != nil {
		return err
	}
	prevAt := time.Now()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
		if !sleep(ctx, time.Second) {
			return ctx.Err()
		}
		cur, err := readRedis(ctx, stats)
		if err != nil {
			return err
		}
		rate := float64(cur.Commands-prev.Commands) / time.Since(prevAt).Seconds()
		if rate < quietRate {
			return nil
		}
		fmt.Fprintf(out, "  Redis busy with the devices' start: %.0f calls/s\n", rate)
		prev, prevAt = cur, time.Now()
	}
	return fmt.Errorf("redis did not quiet down within 2 minutes of the devices' start")
}
