package ops

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/event"
)

// MongoMonitor returns a MongoDB command monitor that records each command's latency, as the
// driver measured it, by command name, and counts failures. next, when not nil, sees every
// event too: a client takes one monitor, and tests count commands through theirs.
func (m *Metrics) MongoMonitor(next *event.CommandMonitor) *event.CommandMonitor {
	if next == nil {
		next = &event.CommandMonitor{}
	}
	return &event.CommandMonitor{
		Started: next.Started,
		Succeeded: func(ctx context.Context, e *event.CommandSucceededEvent) {
			m.mongoDuration.WithLabelValues(e.CommandName).Observe(e.Duration.Seconds())
			if next.Succeeded != nil {
				next.Succeeded(ctx, e)
			}
		},
		Failed: func(ctx context.Context, e *event.CommandFailedEvent) {
			m.mongoDuration.WithLabelValues(e.CommandName).Observe(e.Duration.Seconds())
			m.mongoFailures.WithLabelValues(e.CommandName).Inc()
			if next.Failed != nil {
				next.Failed(ctx, e)
			}
		},
	}
}
