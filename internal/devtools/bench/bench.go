package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/server"
)

// Options configures a bench run. The zero value is usable: every zero field takes its default.
type Options struct {
	// Duration is how long each handler is driven in each round. Default DefaultDuration.
	Duration time.Duration
	// Rounds is how often each pair (gateway, baseline) is driven, alternately. Default
	// DefaultRounds.
	Rounds int
	// Concurrency is how many clients send at once, each waiting for its answer. Default
	// DefaultConcurrency.
	Concurrency int
	// ColdRequests is how many cold history pages are timed, one at a time. Default
	// DefaultColdRequests.
	ColdRequests int
	// Dir holds the run's store and redis-server files; default a new temporary directory,
	// removed at the end.
	Dir string
	// Gateway, when set, changes the gateway's configuration before it opens.
	Gateway func(*gateway.Config)
	// Out receives progress and the report. Default os.Stdout.
	Out io.Writer
	// Profile, when set, is told when the measured runs start (true) and end (false), for a
	// CPU profile of them.
	Profile func(start bool)
	// Only, when set, measures only the scenarios whose name contains it (the cold page
	// too only if it matches), so that a CPU profile shows one page's work alone.
	Only string
	// BigList is how many conversations the second viewer has, whose list page is measured
	// against the first viewer's (20 conversations). Default DefaultBigList.
	BigList int
	// TimeLength is how many messages the conversation searched by seqAtTime holds. Default
	// DefaultTimeLength. It is stored only when Only lets the seqAtTime rows run.
	TimeLength int
}

// Defaults of Options' zero fields.
const (
	DefaultDuration     = 5 * time.Second
	DefaultRounds       = 2
	DefaultConcurrency  = 32
	DefaultColdRequests = 50
	DefaultBigList      = 10000
	DefaultTimeLength   = 100000
)

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.ColdRequests <= 0 {
		o.ColdRequests = DefaultColdRequests
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.BigList <= 0 {
		o.BigList = DefaultBigList
	}
	if o.TimeLength <= 0 {
		o.TimeLength = DefaultTimeLength
	}
	return o
}

// Row is one measured handler of a scenario.
type Row struct {
	Scenario, Handler string
	PerSecond         float64
	P50, P99          time.Duration
	Requests, Errors  int
	// AllocsPerRequest is measured apart, one request at a time through the handler.
	AllocsPerRequest float64
}

// Report is what a run measured: for each scenario its gateway and baseline rows, and the
// ratio of their requests per second (above 1: the gateway is faster).
type Report struct {
	Rows   []Row
	Ratios map[string]float64
	// GroupOverSingle is the gateway's requests per second on the warm group page over those on
	// the single chat's page, when the run measured both (else 0): what a membership costs.
	GroupOverSingle float64
	// BigListRatio is the gateway's requests per second on the list page of the viewer of
	// Options.BigList conversations over those on the page of the viewer of 20, when both
	// were measured (else 0): 1 when a page does not cost more for a longer list.
	BigListRatio float64
}

// The scenarios GroupOverSingle compares.
const (
	singleHistoryName = "history page (100 messages, warm)"
	groupHistoryName  = "group history page (100 messages, warm)"
)

// listName is the scenario of the list page of the viewer of 20 conversations.
const listName = "conversation list (20, lastMessage, unread)"

// mentionListName is the scenario of the same page with each node's unreadMentionCount.
const mentionListName = "conversation list with unreadMentionCount (20, lastMessage, unread)"

// scenario is one page measured against its baseline (nil baseline: the cold reference).
type scenario struct {
	name     string
	gateway  target
	baseline target
	handler  http.Handler // the gateway's, for allocation counts
	base     http.Handler
	// labels name the two handlers in the report; default "gateway" and "baseline".
	gatewayLabel, baselineLabel string
	// paired: the two are driven at once, half the clients each, in many short rounds, and
	// the ratio is the median of the rounds' ratios (drivePairs), for a ratio close to 1 that
	// the machine's drift would otherwise hide.
	paired bool
}

// Run starts a redis-server, the gateway on the embedded store, fills them, checks that the
// gateway and the baselines answer the same JSON, then drives each scenario and prints the
// report.
func Run(ctx context.Context, o Options) (Report, error) {
	o = o.withDefaults()
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "msggate-bench-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	fmt.Fprintf(o.Out, "starting redis-server and the embedded store under %s...\n", dir)
	redisServer, err := testenv.StartRedisServer(dir)
	if err != nil {
		return Report{}, err
	}
	defer redisServer.Stop()
	cfg := benchConfig(dir, redisServer.URL())
	if o.Gateway != nil {
		o.Gateway(&cfg)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := gateway.Open(ctx, cfg, logger)
	if err != nil {
		return Report{}, err
	}
	defer g.Close()
	fmt.Fprintf(o.Out, "storing a conversation of %d messages, %d of 3, and a group of %d members with %d messages...\n",
		longLength, peers-1, groupSize, longLength)
	if err := fill(ctx, g); err != nil {
		return Report{}, fmt.Errorf("filling the store: %w", err)
	}
	fmt.Fprintf(o.Out, "storing %d conversations of one message for a second viewer...\n", o.BigList)
	began := time.Now()
	if err := fillBig(ctx, g, o.BigList); err != nil {
		return Report{}, fmt.Errorf("filling the store: %w", err)
	}
	fmt.Fprintf(o.Out, "  (%s)\n", time.Since(began).Round(time.Second))

	rdb := newRESPPool(redisServer.Addr(), o.Concurrency*2)
	defer rdb.close()
	handler := g.Handler()
	gwBase, stopGateway, err := serve(handler)
	if err != nil {
		return Report{}, err
	}
	defer stopGateway()
	gwURL := gwBase + "/query"
	token, err := auth.Issue(g.Secret, viewer, false, 24*time.Hour, time.Now())
	if err != nil {
		return Report{}, err
	}
	client := newClient(o.Concurrency)
	defer client.CloseIdleConnections()

	conv := longConversation()
	gwHistory := target{url: gwURL, token: token, body: graphQLBody(historyQuery, map[string]any{"c": conv})}
	gwMessages := target{url: gwURL, token: token, body: graphQLBody(messagesQuery, map[string]any{"c": conv, "s": spreadSeqs()})}
	gwList := target{url: gwURL, token: token, body: graphQLBody(listQuery, nil)}
	bigToken, err := auth.Issue(g.Secret, bigViewer, false, 24*time.Hour, time.Now())
	if err != nil {
		return Report{}, err
	}
	gwBigList := target{url: gwURL, token: bigToken, body: gwList.body}
	answers := make([][]byte, 4)
	for i, t := range []target{gwHistory, gwMessages, gwList, gwBigList} {
		if answers[i], err = fetch(ctx, client, t); err != nil {
			return Report{}, err
		}
		if bytes.Contains(answers[i], []byte(`"errors"`)) {
			return Report{}, fmt.Errorf("the gateway answered errors: %s", answers[i])
		}
	}
	msgKeys, convKeys, err := writeBaselines(rdb, answers[0], answers[1], answers[2])
	if err != nil {
		return Report{}, fmt.Errorf("storing the baselines' records: %w", err)
	}
	bigConvKeys, err := writeListRecords(rdb, baselineBigConvPrefix, answers[3])
	if err != nil {
		return Report{}, fmt.Errorf("storing the baselines' records: %w", err)
	}
	baselines := []http.Handler{historyBaseline(rdb, baselineHistoryKey), messagesBaseline(rdb, msgKeys), conversationsBaseline(rdb, convKeys),
		conversationsBaseline(rdb, bigConvKeys)}
	paths := []string{"/history", "/messages", "/conversations", "/conversations-big"}
	bigListName := fmt.Sprintf("conversation list of %d (20, lastMessage, unread)", o.BigList)
	scenarios := []scenario{
		{name: singleHistoryName, gateway: gwHistory, handler: handler},
		{name: "messages by seq (100 over 10 chunks)", gateway: gwMessages, handler: handler},
		{name: listName, gateway: gwList, handler: handler},
		{name: bigListName, gateway: gwBigList, handler: handler},
	}

	groupToken, err := auth.Issue(g.Secret, groupViewer, false, 24*time.Hour, time.Now())
	if err != nil {
		return Report{}, err
	}
	gwGroup := target{url: gwURL, token: groupToken, body: graphQLBody(historyQuery, map[string]any{"c": groupConversation()})}
	groupAnswer, err := fetch(ctx, client, gwGroup)
	if err != nil {
		return Report{}, err
	}
	if bytes.Contains(groupAnswer, []byte(`"errors"`)) {
		return Report{}, fmt.Errorf("the gateway answered errors: %s", groupAnswer)
	}
	if err := writeHistoryRecord(rdb, baselineGroupHistoryKey, groupAnswer); err != nil {
		return Report{}, fmt.Errorf("storing the group baseline's record: %w", err)
	}
	answers = append(answers, groupAnswer)
	baselines = append(baselines, historyBaseline(rdb, baselineGroupHistoryKey))
	paths = append(paths, "/group/history")
	scenarios = append(scenarios, scenario{name: groupHistoryName, gateway: gwGroup, handler: handler})

	jump, err := jumpScenarios(ctx, o, g, client, rdb, gwURL, handler)
	if err != nil {
		return Report{}, err
	}
	scenarios, answers = append(scenarios, jump.scenarios...), append(answers, jump.answers...)
	baselines, paths = append(baselines, jump.baselines...), append(paths, jump.paths...)
	// The list page with each node's unread mention count, against the same MGET of records
	// that hold the count too.
	gwMentionList := target{url: gwURL, token: token, body: graphQLBody(mentionListQuery, nil)}
	mentionAnswer, err := fetch(ctx, client, gwMentionList)
	if err != nil {
		return Report{}, err
	}
	if bytes.Contains(mentionAnswer, []byte(`"errors"`)) {
		return Report{}, fmt.Errorf("the gateway answered errors: %s", mentionAnswer)
	}
	mentionConvKeys, err := writeListRecords(rdb, baselineMentionConvPrefix, mentionAnswer)
	if err != nil {
		return Report{}, fmt.Errorf("storing the mention list baseline's records: %w", err)
	}
	answers = append(answers, mentionAnswer)
	baselines = append(baselines, conversationsBaseline(rdb, mentionConvKeys))
	paths = append(paths, "/conversations-mentions")
	scenarios = append(scenarios, scenario{name: mentionListName, gateway: gwMentionList, handler: handler})

	fmt.Fprintf(o.Out, "storing the same data in an OpenIM deployment (openimtest) and opening a gateway on it in OpenIM mode...\n")
	oim, err := startOpenIM(ctx, dir, redisServer.URL(), redisServer.Addr(), o.Gateway)
	if err != nil {
		return Report{}, fmt.Errorf("OpenIM mode: %w", err)
	}
	defer oim.close()
	oimHandler := oim.g.Handler()
	oimBase, stopOpenIM, err := serve(oimHandler)
	if err != nil {
		return Report{}, err
	}
	defer stopOpenIM()
	oimHistory := target{url: oimBase + "/query", token: oim.token, body: gwHistory.body}
	oimList := target{url: oimBase + "/query", token: oim.token, body: gwList.body}
	oimAnswers := make([][]byte, 2)
	for i, t := range []target{oimHistory, oimList} {
		if oimAnswers[i], err = fetch(ctx, client, t); err != nil {
			return Report{}, err
		}
		if bytes.Contains(oimAnswers[i], []byte(`"errors"`)) {
			return Report{}, fmt.Errorf("the OpenIM gateway answered errors: %s", oimAnswers[i])
		}
	}
	if err := writeHistoryRecord(rdb, baselineOpenIMHistoryKey, oimAnswers[0]); err != nil {
		return Report{}, fmt.Errorf("storing the OpenIM baselines' records: %w", err)
	}
	oimConvKeys, err := writeListRecords(rdb, baselineOpenIMConvPrefix, oimAnswers[1])
	if err != nil {
		return Report{}, fmt.Errorf("storing the OpenIM baselines' records: %w", err)
	}
	fmt.Fprintf(o.Out, "opening a gateway in OpenIM mode with OpenIM's Kafka (in process), which keeps OpenIM's chunks...\n")
	fed, stopFed, err := oim.withFeed(ctx, dir)
	if err != nil {
		return Report{}, fmt.Errorf("OpenIM mode with its Kafka: %w", err)
	}
	defer stopFed()
	fedHandler := fed.Handler()
	fedBase, stopFedServer, err := serve(fedHandler)
	if err != nil {
		return Report{}, err
	}
	defer stopFedServer()
	fedHistory := target{url: fedBase + "/query", token: oim.token, body: gwHistory.body}
	fedAnswer, err := fetch(ctx, client, fedHistory)
	if err != nil {
		return Report{}, err
	}

	answers = append(answers, oimAnswers[0], oimAnswers[1], fedAnswer)
	baselines = append(baselines, historyBaseline(rdb, baselineOpenIMHistoryKey), conversationsBaseline(rdb, oimConvKeys),
		historyBaseline(rdb, baselineOpenIMHistoryKey))
	paths = append(paths, "/openim/history", "/openim/conversations", "/openim/history-fed")
	scenarios = append(scenarios,
		scenario{name: "history page, OpenIM mode (100 messages, warm)", gateway: oimHistory, handler: oimHandler},
		scenario{name: "conversation list, OpenIM mode (20, lastMessage, unread)", gateway: oimList, handler: oimHandler},
		scenario{name: "history page, OpenIM mode with its Kafka (100 messages, warm, cached)", gateway: fedHistory, handler: fedHandler})

	mux := http.NewServeMux()
	for i, p := range paths {
		mux.Handle(p, baselines[i])
	}
	baseURL, stopBaseline, err := serve(mux)
	if err != nil {
		return Report{}, err
	}
	defer stopBaseline()
	for i := range scenarios {
		scenarios[i].baseline = target{url: baseURL + paths[i], body: []byte("{}")}
		scenarios[i].base = baselines[i]
		// Both must answer the same JSON, or the ratio compares different work.
		got, err := fetch(ctx, client, scenarios[i].baseline)
		if err != nil {
			return Report{}, err
		}
		if err := sameJSON(answers[i], got); err != nil {
			return Report{}, fmt.Errorf("%s: the baseline's answer differs from the gateway's: %w", scenarios[i].name, err)
		}
	}

	if strings.Contains(tracedHistoryName, o.Only) {
		fmt.Fprintf(o.Out, "opening two more gateways, tracing on (%.0f%% sampled, OTLP/HTTP to a collector in this process) and off, and storing the same data in each...\n", traceSampleRatio*100)
		tg, err := startTraced(ctx, dir, "traced-gateway", redisServer.URL(), 2, true, o.Gateway)
		if err != nil {
			return Report{}, fmt.Errorf("tracing on: %w", err)
		}
		defer tg.close()
		untraced, err := startTraced(ctx, dir, "untraced-gateway", redisServer.URL(), 3, false, o.Gateway)
		if err != nil {
			return Report{}, fmt.Errorf("tracing off: %w", err)
		}
		defer untraced.close()
		got, err := fetch(ctx, client, tg.history)
		if err != nil {
			return Report{}, err
		}
		// The same messages, but their server message IDs are the store's own.
		if err := sameJSON(withoutKey(answers[0], "serverMsgID"), withoutKey(got, "serverMsgID")); err != nil {
			return Report{}, fmt.Errorf("%s: the traced gateway's answer differs from the gateway's: %w", tracedHistoryName, err)
		}
		if _, err := fetch(ctx, client, untraced.history); err != nil {
			return Report{}, err
		}
		scenarios = append(scenarios, scenario{name: tracedHistoryName, gateway: tg.history, handler: tg.handler,
			baseline: untraced.history, base: untraced.handler, gatewayLabel: "tracing 1%", baselineLabel: "tracing off",
			paired: true})
		defer func() {
			fmt.Fprintf(o.Out, "\nthe traced gateway's collector took %d OTLP exports\n", tg.spans.Load())
		}()
	}

	report := Report{Ratios: map[string]float64{}}
	if o.Profile != nil {
		o.Profile(true)
	}
	var measured []scenario
	for _, s := range scenarios {
		if strings.Contains(s.name, o.Only) {
			measured = append(measured, s)
		}
	}
	// Each round drives every page's gateway and baseline in turn, so that the machine's
	// drift during a run moves every page alike and pages can be compared with each other
	// (GroupOverSingle), not only each with its baseline.
	for _, s := range measured {
		if !s.paired {
			fmt.Fprintf(o.Out, "measuring %s: %d rounds of %s per handler, %d clients...\n", s.name, o.Rounds, o.Duration, o.Concurrency)
		}
		// A short warm-up of each, so that neither pays for connections or first reads.
		drive(ctx, client, s.gateway, o.Concurrency, o.Duration/5)
		drive(ctx, client, s.baseline, o.Concurrency, o.Duration/5)
	}
	gws, bases := make([]result, len(measured)), make([]result, len(measured))
	for range o.Rounds {
		for i, s := range measured {
			if s.paired {
				continue
			}
			gws[i] = gws[i].merge(drive(ctx, client, s.gateway, o.Concurrency, o.Duration))
			bases[i] = bases[i].merge(drive(ctx, client, s.baseline, o.Concurrency, o.Duration))
		}
	}
	pairedRatios := map[string]float64{}
	for i, s := range measured {
		if !s.paired {
			continue
		}
		// As long as the two would be driven one after the other.
		n := max(1, int(2*time.Duration(o.Rounds)*o.Duration/pairSlot))
		fmt.Fprintf(o.Out, "measuring %s: %d pairs of %s, the two at once, %d clients each...\n", s.name, n, pairSlot, max(1, o.Concurrency/2))
		var p pairs
		gws[i], bases[i], p = drivePairs(ctx, client, s.gateway, s.baseline, o.Concurrency, n)
		pairedRatios[s.name] = p.median()
		defer fmt.Fprintf(o.Out, "\n%s: %s / %s per pair of %s: median %.2fx, quartiles %.2fx to %.2fx, %d pairs\n",
			s.name, s.gatewayLabel, s.baselineLabel, pairSlot, p.median(), p.quantile(0.25), p.quantile(0.75), len(p))
	}
	if ctx.Err() != nil {
		return Report{}, ctx.Err()
	}
	for i, s := range measured {
		gwAllocs, err := allocsPerRequest(s.handler, s.gateway, 200)
		if err != nil {
			return Report{}, err
		}
		baseAllocs, err := allocsPerRequest(s.base, s.baseline, 200)
		if err != nil {
			return Report{}, err
		}
		gw, base := gws[i], bases[i]
		report.Rows = append(report.Rows, rowOf(s.name, cmp.Or(s.gatewayLabel, "gateway"), gw, gwAllocs),
			rowOf(s.name, cmp.Or(s.baselineLabel, "baseline"), base, baseAllocs))
		if ratio, ok := pairedRatios[s.name]; ok {
			report.Ratios[s.name] = ratio
		} else if base.perSecond() > 0 {
			report.Ratios[s.name] = gw.perSecond() / base.perSecond()
		}
	}
	if small := gatewayRate(report, listName); small > 0 {
		report.BigListRatio = gatewayRate(report, bigListName) / small
	}

	if o.Profile != nil {
		o.Profile(false)
	}
	if single := gatewayRate(report, singleHistoryName); single > 0 {
		report.GroupOverSingle = gatewayRate(report, groupHistoryName) / single
	}
	if coldName := "history page (100 messages, cold: FerretDB)"; strings.Contains(coldName, o.Only) {
		fmt.Fprintf(o.Out, "measuring the cold history page: %d requests one at a time, chunks invalidated before each...\n", o.ColdRequests)
		cold, err := coldPages(ctx, client, g, gwHistory, o.ColdRequests)
		if err != nil {
			return Report{}, err
		}
		report.Rows = append(report.Rows, rowOf(coldName, "gateway", cold, 0))
	}
	if coldName := fmt.Sprintf(seqAtTimeColdName, o.TimeLength); jump.seqAtTime != nil && strings.Contains(coldName, o.Only) {
		fmt.Fprintf(o.Out, "measuring seqAtTime cold: %d requests one at a time, every chunk invalidated before each...\n", o.ColdRequests)
		cold, err := coldSeqAtTime(ctx, client, g, *jump.seqAtTime, o.TimeLength, o.ColdRequests)
		if err != nil {
			return Report{}, err
		}
		report.Rows = append(report.Rows, rowOf(coldName, "gateway", cold, 0))
	}
	printReport(o.Out, report, scenarios)
	if report.BigListRatio > 0 {
		fmt.Fprintf(o.Out, "\nthe list page of %d conversations / of 20, the gateway's requests per second: %.2fx\n", o.BigList, report.BigListRatio)
	}
	return report, nil
}

// benchConfig is the configuration of the bench's gateways in msggate's mode.
func benchConfig(dir, redisURL string) gateway.Config {
	return gateway.Config{
		DataDir:  dir,
		RedisURL: redisURL,
		// The bench measures the read path, not the limiter's round trip.
		Handler:    server.Settings{RateLimit: -1},
		LogOutput:  io.Discard,
		Playground: false,
	}
}

// coldPages times n history pages, each after the page's chunks were invalidated as a write
// invalidates them, so that each is read from the store.
func coldPages(ctx context.Context, client *http.Client, g *gateway.Gateway, t target, n int) (result, error) {
	var docIDs []string
	for s := int64(longLength - 99); s <= longLength; s += im.ChunkSize {
		docIDs = append(docIDs, im.DocID(longConversation(), s))
	}
	docIDs = append(docIDs, im.DocID(longConversation(), longLength))
	return timeCold(ctx, client, g, t, docIDs, n)
}

// timeCold times n requests one at a time, each after docIDs were invalidated as a write
// invalidates them.
func timeCold(ctx context.Context, client *http.Client, g *gateway.Gateway, t target, docIDs []string, n int) (result, error) {
	var r result
	var body bytes.Buffer
	for range n {
		if err := g.Cache.InvalidateChunks(ctx, docIDs); err != nil {
			return result{}, err
		}
		began := time.Now()
		if err := roundTrip(ctx, client, t, &body); err != nil {
			return result{}, err
		}
		d := time.Since(began)
		r.elapsed += d
		r.requests++
		r.latencies = append(r.latencies, d)
	}
	return r.merge(result{}), nil
}

// gatewayRate is the gateway's requests per second in the scenario, 0 when it was not measured.
func gatewayRate(r Report, scenario string) float64 {
	for _, row := range r.Rows {
		if row.Scenario == scenario && row.Handler == "gateway" {
			return row.PerSecond
		}
	}
	return 0
}

func rowOf(scenario, handler string, r result, allocs float64) Row {
	return Row{Scenario: scenario, Handler: handler, PerSecond: r.perSecond(), P50: r.percentile(0.50), P99: r.percentile(0.99),
		Requests: r.requests, Errors: r.errors, AllocsPerRequest: allocs}
}

func printReport(w io.Writer, r Report, scenarios []scenario) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\thandler\treq/s\tp50\tp99\trequests\terrors\tallocs/req\t")
	for _, row := range r.Rows {
		allocs := "-"
		if row.AllocsPerRequest > 0 {
			allocs = fmt.Sprintf("%.0f", row.AllocsPerRequest)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%d\t%d\t%s\t\n", row.Scenario, row.Handler, row.PerSecond,
			row.P50.Round(10*time.Microsecond), row.P99.Round(10*time.Microsecond), row.Requests, row.Errors, allocs)
	}
	tw.Flush()
	fmt.Fprintln(w, "\ngateway / baseline, requests per second in the same run (above 1.00: the gateway is faster):")
	for _, s := range scenarios {
		if ratio, measured := r.Ratios[s.name]; measured {
			fmt.Fprintf(w, "  %-45s %.2fx\n", s.name, ratio)
		}
	}
	if r.GroupOverSingle > 0 {
		fmt.Fprintf(w, "\nthe group page over the single chat's page, the gateway's requests per second: %.2fx\n", r.GroupOverSingle)
	}
}

// allocsPerRequest is the average number of heap allocations of one request through h, one
// at a time and without the network (the process's other goroutines count too).
func allocsPerRequest(h http.Handler, t target, n int) (float64, error) {
	do := func() error {
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(t.body))
		req.Header.Set("Content-Type", "application/json")
		if t.token != "" {
			req.Header.Set("Authorization", "Bearer "+t.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return fmt.Errorf("allocation count: status %d: %s", rec.Code, rec.Body)
		}
		return nil
	}
	if err := do(); err != nil {
		return 0, err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// At most n requests, and no more than allocCountTime of them: an OpenIM page on the
	// embedded store takes a scan of its msg collection (see openim.go) and would make the
	// count the longest part of a run.
	deadline := time.Now().Add(allocCountTime)
	done := 0
	for done < n && (done < 10 || time.Now().Before(deadline)) {
		if err := do(); err != nil {
			return 0, err
		}
		done++
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(done), nil
}

// allocCountTime bounds the requests allocsPerRequest counts over.
const allocCountTime = 2 * time.Second

// serve serves h on a free loopback port.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// withoutKey returns the JSON document doc with every object member named key removed; doc
// as it is when it is not JSON.
func withoutKey(doc []byte, key string) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return doc
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, key)
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	out, _ := json.Marshal(v)
	return out
}

// sameJSON reports whether two JSON documents hold the same values.
func sameJSON(a, b []byte) error {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return err
	}
	if !reflect.DeepEqual(va, vb) {
		return errors.New("the values differ")
	}
	return nil
}
