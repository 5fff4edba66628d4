package ops

import "time"

// ObserveRedisCall records one Redis round trip (see cache.TimingHook for the labels).
func (m *Metrics) ObserveRedisCall(label string, took time.Duration, failed bool) {
	m.redisDuration.WithLabelValues(label).Observe(took.Seconds())
	if failed {
		m.redisFailures.WithLabelValues(label).Inc()
	}
}

// ObserveMongoCommand records one MongoDB command (see chunkstore.TimingMonitor).
func (m *Metrics) ObserveMongoCommand(command string, took time.Duration, failed bool) {
	m.mongoDuration.WithLabelValues(command).Observe(took.Seconds())
	if failed {
		m.mongoFailures.WithLabelValues(command).Inc()
	}
}
