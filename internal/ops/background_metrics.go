package ops

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RelayLookObserver records one look of the outbox relay (ingest.RelayLook): the intents past
// their due, how long ago the oldest was recorded, what the look finished, and whether it
// failed.
type RelayLookObserver func(due int, oldestAge time.Duration, finished int, failed bool)

// WatchRelay registers the outbox relay's series and returns what records each look into
// them: msggate_relay_due_intents and msggate_relay_oldest_intent_age_seconds (as of the last look),
// msggate_relay_intents_finished_total and msggate_relay_look_failures_total. A due intent is
// a change whose writer died or failed before announcing it; a backlog that does not shrink
// means devices are not told of stored messages.
func (m *Metrics) WatchRelay() RelayLookObserver {
	due := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "msggate_relay_due_intents",
		Help: "Intents in the outbox past their due at the relay's last look: changes stored whose announcement a writer left unfinished.",
	})
	oldest := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "msggate_relay_oldest_intent_age_seconds",
		Help: "How long ago the oldest due intent was recorded, at the relay's last look: how long its change has waited to be announced (0: none due).",
	})
	finished := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "msggate_relay_intents_finished_total",
		Help: "Intents the relay finished for writers that left them.",
	})
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "msggate_relay_look_failures_total",
		Help: "Looks of the relay that failed (the store or Redis unreachable); the intents wait for the next.",
	})
	m.registry.MustRegister(due, oldest, finished, failures)
	return func(n int, age time.Duration, done int, failed bool) {
		due.Set(float64(n))
		oldest.Set(age.Seconds())
		finished.Add(float64(done))
		if failed {
			failures.Inc()
		}
	}
}

// WatchFeedLag exports lag (the records of OpenIM's Kafka topic msggate has not applied yet,
// openimfeed.Feed.Lag) as the gauge msggate_openim_feed_lag_records, read at each scrape.
func (m *Metrics) WatchFeedLag(lag func() int64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msggate_openim_feed_lag_records",
		Help: "Records of OpenIM's Kafka topic not applied yet, summed over this instance's partitions, as of its last poll.",
	}, func() float64 { return float64(lag()) }))
}

// WatchSearchBacklog exports backlog (the seqs OpenIM's feed touched that wait to be indexed,
// kept in msggate's Redis and shared by every instance) as the gauge
// msggate_openim_search_backlog_seqs, read at each scrape; a read that fails (Redis down)
// leaves the scrape without the series rather than with a wrong figure.
func (m *Metrics) WatchSearchBacklog(backlog func() (int64, error)) {
	m.registry.MustRegister(&searchBacklogCollector{read: backlog, desc: prometheus.NewDesc(
		"msggate_openim_search_backlog_seqs",
		"Seqs of OpenIM's conversations waiting to be read and indexed for search (one backlog in msggate's Redis, shared by every instance).",
		nil, nil)})
}

// searchBacklogCollector reads the backlog at each scrape and emits nothing when the read fails.
type searchBacklogCollector struct {
	read func() (int64, error)
	desc *prometheus.Desc
}

func (c *searchBacklogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *searchBacklogCollector) Collect(ch chan<- prometheus.Metric) {
	if n, err := c.read(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
	}
}
