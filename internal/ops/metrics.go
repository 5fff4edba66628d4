package ops

import (
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latencyBuckets span a Redis call on loopback (well under a millisecond) up to a slow
// GraphQL request; Prometheus's default buckets start at 5ms and would put every Redis call
// in the first one.
var latencyBuckets = []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// batchBuckets cover one key up to a loader's default batch capacity (1000).
var batchBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}

// Metrics is one gateway's Prometheus registry and the collectors msggate records into. Each
// Metrics has a registry of its own rather than the process-wide default, so that several
// gateways in one process (tests do this) never collide. It is safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	graphqlRequests *prometheus.CounterVec
	graphqlDuration *prometheus.HistogramVec
	graphqlErrors   *prometheus.CounterVec
	batchSize       *prometheus.HistogramVec
	cacheHits       prometheus.Counter
	cacheMisses     prometheus.Counter
	mongoDuration   *prometheus.HistogramVec
	mongoFailures   *prometheus.CounterVec
	redisDuration   *prometheus.HistogramVec
	redisFailures   *prometheus.CounterVec

	droppedSubscribers *prometheus.CounterVec
	limitRefusals      *prometheus.CounterVec
	skippedFeedRecords *prometheus.CounterVec

	operations operationNames
}

// NewMetrics returns a Metrics with every msggate series registered, plus the Go runtime and
// process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		graphqlRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_graphql_requests_total",
			Help: "GraphQL operations answered, by operation name; (anonymous), (invalid) before an operation was chosen, (other) past 500 names.",
		}, []string{"operation"}),
		graphqlDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msggate_graphql_request_duration_seconds",
			Help:    "Time from reading a GraphQL request to its answer, by operation name.",
			Buckets: latencyBuckets,
		}, []string{"operation"}),
		graphqlErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_graphql_errors_total",
			Help: "GraphQL errors answered, by operation name and extensions.code.",
		}, []string{"operation", "code"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msggate_dataloader_batch_size",
			Help:    "Keys per dataloader batch, by loader.",
			Buckets: batchBuckets,
		}, []string{"loader"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msggate_chunk_cache_hits_total",
			Help: "Message chunks found in the Redis cache.",
		}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msggate_chunk_cache_misses_total",
			Help: "Message chunks not found in the Redis cache (or read while it failed) and looked up in MongoDB.",
		}),
		mongoDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msggate_mongodb_command_duration_seconds",
			Help:    "MongoDB command latency as the driver measured it, by command name.",
			Buckets: latencyBuckets,
		}, []string{"command"}),
		mongoFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_mongodb_command_failures_total",
			Help: "MongoDB commands that failed, by command name.",
		}, []string{"command"}),
		redisDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msggate_redis_call_duration_seconds",
			Help:    "Redis call latency including retries, by command name; a pipeline counts once as \"pipeline\".",
			Buckets: latencyBuckets,
		}, []string{"command"}),
		redisFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_redis_call_failures_total",
			Help: "Redis calls that failed (a missing key is not a failure), by command name or \"pipeline\".",
		}, []string{"command"}),
		droppedSubscribers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_sync_subscribers_dropped_total",
			Help: "syncEvents subscriptions the gateway ended, by reason (slow_consumer, shutdown).",
		}, []string{"reason"}),
		limitRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_limit_refusals_total",
			Help: "Requests and connections refused by a limit that guards the gateway, by limit: bodySize, rate, anonymousRate (HTTP 413 or 429), pendingConnections (HTTP 429), userConnections (WebSocket close 4429).",
		}, []string{"limit"}),
		skippedFeedRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msggate_openim_feed_records_skipped_total",
			Help: "Records of OpenIM's Kafka topic the feed moved past without applying them, by reason (undecodable, refused); each is kept in Redis (msggate:feed:skipped).",
		}, []string{"reason"}),
	}
	m.registry.MustRegister(
		// The default Go metrics, and the heap the last GC found live (go_gc_heap_live_bytes):
		// what the gateway holds, without the garbage heap-in-use still counts.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.graphqlRequests, m.graphqlDuration, m.graphqlErrors,
		m.batchSize, m.cacheHits, m.cacheMisses,
		m.mongoDuration, m.mongoFailures,
		m.redisDuration, m.redisFailures,
		m.droppedSubscribers, m.limitRefusals, m.skippedFeedRecords,
	)
	// The reasons are few and known: their series exist from the start, at 0, so that a
	// dashboard's rate() and an alert on them have a series before the first drop or skip.
	for _, reason := range []string{"slow_consumer", "shutdown"} {
		m.droppedSubscribers.WithLabelValues(reason)
	}
	for _, reason := range []string{"undecodable", "refused"} {
		m.skippedFeedRecords.WithLabelValues(reason)
	}
	return m
}

// Registry is where the series live, for callers that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// ObserveBatch records one dataloader batch of keys keys, for the loader named loader.
func (m *Metrics) ObserveBatch(loader string, keys int) {
	m.batchSize.WithLabelValues(loader).Observe(float64(keys))
}

// ObserveChunkCache records one chunk load: how many chunks the cache had and how many had to
// come from MongoDB.
func (m *Metrics) ObserveChunkCache(hits, misses int) {
	m.cacheHits.Add(float64(hits))
	m.cacheMisses.Add(float64(misses))
}

// Operation labels that are not names a client chose.
const (
	anonymousOperation = "(anonymous)" // a valid operation without a name
	invalidOperation   = "(invalid)"   // the request failed before an operation was chosen
	otherOperation     = "(other)"     // a name past the cardinality bound
)

// Parentheses cannot occur in a GraphQL name, so these never collide with a client's.

// maxOperationNames bounds the operation label's values: operation names come from clients,
// and a client sending a fresh name each time must not grow the registry without end.
const maxOperationNames = 500

// maxOperationNameLen keeps one absurd name from becoming a label value.
const maxOperationNameLen = 100

// operationNames remembers which operation names have a series of their own.
type operationNames struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

func (o *operationNames) label(name string) string {
	switch {
	case name == "":
		return anonymousOperation
	case len(name) > maxOperationNameLen:
		return otherOperation
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[name]; ok {
		return name
	}
	if len(o.seen) >= maxOperationNames {
		return otherOperation
	}
	if o.seen == nil {
		o.seen = map[string]struct{}{}
	}
	o.seen[name] = struct{}{}
	return name
}

// WatchSubscribers exports count (the open sync subscriptions of this instance) as the gauge
// msggate_sync_subscribers, read at each scrape.
func (m *Metrics) WatchSubscribers(count func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msggate_sync_subscribers",
		Help: "Open syncEvents subscriptions on this instance.",
	}, func() float64 { return float64(count()) }))
}

// WatchLiveSubscribers exports count (the subscriptions of this instance that caught up once
// and stream live events) as the gauge msggate_sync_subscribers_live.
func (m *Metrics) WatchLiveSubscribers(count func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msggate_sync_subscribers_live",
		Help: "syncEvents subscriptions on this instance past their first catch-up, streaming live.",
	}, func() float64 { return float64(count()) }))
}

// LimitRefused counts a refusal by one of the limits that guard the gateway
// (server.OperationMetrics).
func (m *Metrics) LimitRefused(limit string) {
	m.limitRefusals.WithLabelValues(limit).Inc()
}

// CountDroppedSubscriber counts a subscription the gateway ended (slow consumer, shutdown).
func (m *Metrics) CountDroppedSubscriber(reason string) {
	m.droppedSubscribers.WithLabelValues(reason).Inc()
}

// CountSkippedFeedRecord counts a record of OpenIM's Kafka topic the feed moved past without
// applying it (undecodable, refused).
func (m *Metrics) CountSkippedFeedRecord(reason string) {
	m.skippedFeedRecords.WithLabelValues(reason).Inc()
}

// ChunkMemoryFigures are what an instance's in-process chunk memory reports at a scrape.
type ChunkMemoryFigures struct {
	Hits, Misses, Evictions int64
	Bytes                   int64
	Chunks                  int
}

// WatchChunkMemory exports the in-process chunk memory's figures, read at each scrape:
// msggate_chunk_memory_{hits,misses,evictions}_total, msggate_chunk_memory_bytes and
// msggate_chunk_memory_chunks.
func (m *Metrics) WatchChunkMemory(figures func() ChunkMemoryFigures) {
	counter := func(name, help string, pick func(ChunkMemoryFigures) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return pick(figures()) })
	}
	gauge := func(name, help string, pick func(ChunkMemoryFigures) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return pick(figures()) })
	}
	m.registry.MustRegister(
		counter("msggate_chunk_memory_hits_total", "Chunk reads answered from the in-process memory (their chunks version unchanged in Redis): no round trip.",
			func(f ChunkMemoryFigures) float64 { return float64(f.Hits) }),
		counter("msggate_chunk_memory_misses_total", "Chunk reads with a chunks version that the in-process memory could not answer (absent, or held under an older version).",
			func(f ChunkMemoryFigures) float64 { return float64(f.Misses) }),
		counter("msggate_chunk_memory_evictions_total", "Chunks dropped from the in-process memory to stay within -chunk-memory.",
			func(f ChunkMemoryFigures) float64 { return float64(f.Evictions) }),
		gauge("msggate_chunk_memory_bytes", "Estimated bytes of the decoded chunks held in process.",
			func(f ChunkMemoryFigures) float64 { return float64(f.Bytes) }),
		gauge("msggate_chunk_memory_chunks", "Decoded chunks held in process.",
			func(f ChunkMemoryFigures) float64 { return float64(f.Chunks) }),
	)
}

// AdmissionFigures are what a dependency's admission limiter reports at a scrape.
type AdmissionFigures struct {
	InFlight, Queued  int
	MeanServiceTime   time.Duration
	Admitted, Refused int64
}

// WatchAdmission exports the admission limiter of one dependency ("mongodb", "redis") as
// msggate_admission_in_flight, _queued, _service_seconds (the mean an operation holds a slot)
// and the counters _admitted_total and _refused_total, read at each scrape.
func (m *Metrics) WatchAdmission(dependency string, figures func() AdmissionFigures) {
	labels := prometheus.Labels{"dependency": dependency}
	gauge := func(name, help string, v func(AdmissionFigures) float64) {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "msggate_admission_" + name, Help: help, ConstLabels: labels,
		}, func() float64 { return v(figures()) }))
	}
	counter := func(name, help string, v func(AdmissionFigures) float64) {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "msggate_admission_" + name, Help: help, ConstLabels: labels,
		}, func() float64 { return v(figures()) }))
	}
	gauge("in_flight", "Operations this instance runs on the dependency now.", func(f AdmissionFigures) float64 { return float64(f.InFlight) })
	gauge("queued", "Operations waiting for a slot of the dependency.", func(f AdmissionFigures) float64 { return float64(f.Queued) })
	gauge("service_seconds", "Mean time an operation holds a slot of the dependency (recent operations weigh most).",
		func(f AdmissionFigures) float64 { return f.MeanServiceTime.Seconds() })
	counter("admitted_total", "Operations let through to the dependency.", func(f AdmissionFigures) float64 { return float64(f.Admitted) })
	counter("refused_total", "Operations refused because the dependency could not finish them in time (UNAVAILABLE with a retry hint).",
		func(f AdmissionFigures) float64 { return float64(f.Refused) })
}
