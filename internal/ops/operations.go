package ops

import (
	"context"
	"time"
)

// SubscriptionStarted counts a subscription once, when it starts, and names it in its
// request's access log line. graph's metrics extension calls it (server.OperationMetrics).
func (m *Metrics) SubscriptionStarted(ctx context.Context, name string) {
	noteOperation(ctx, name)
	m.graphqlRequests.WithLabelValues(m.operations.label(name)).Inc()
}

// OperationAnswered records one answer of the GraphQL handler (server.OperationMetrics): a
// query's or mutation's is counted and timed, and names the operation in the access log line;
// a subscription's event only has its errors counted. An answer before an operation was chosen
// (chosen false) is labelled (invalid). Errors count by extensions.code, NONE for none.
func (m *Metrics) OperationAnswered(ctx context.Context, name string, chosen, subscription bool, took time.Duration, errorCodes []string) {
	label := invalidOperation
	if chosen {
		label = m.operations.label(name)
	}
	if !subscription {
		if chosen {
			noteOperation(ctx, name)
		}
		m.graphqlRequests.WithLabelValues(label).Inc()
		m.graphqlDuration.WithLabelValues(label).Observe(took.Seconds())
	}
	for _, code := range errorCodes {
		if code == "" {
			code = "NONE"
		}
		m.graphqlErrors.WithLabelValues(label, code).Inc()
	}
}
