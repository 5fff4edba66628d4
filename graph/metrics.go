package ops

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// GraphQL returns the gqlgen extension that counts operations, times them and counts their
// errors by extensions.code. It also tells the access log which operation a request ran.
// Install it before any other extension: gqlgen runs the first one outermost, so it then sees
// every answer, including those of parse, validation and limit errors.
func (m *Metrics) GraphQL() graphql.HandlerExtension { return graphqlMetrics{m} }

type graphqlMetrics struct{ m *Metrics }

func (graphqlMetrics) ExtensionName() string                   { return "msggate metrics" }
func (graphqlMetrics) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation counts a subscription once, when it starts: its responses are events, and
// counting or timing each would say nothing about requests.
func (g graphqlMetrics) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Subscription {
		noteOperation(ctx, op.Name)
		g.m.graphqlRequests.WithLabelValues(g.m.operations.label(op.Name)).Inc()
	}
	return next(ctx)
}

// InterceptResponse runs for every answer, including DispatchError's, which never reaches
// InterceptOperation.
func (g graphqlMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	began := time.Now()
	resp := next(ctx)
	var opCtx *graphql.OperationContext
	if graphql.HasOperationContext(ctx) {
		opCtx = graphql.GetOperationContext(ctx)
	}
	label := invalidOperation
	subscription := false
	if opCtx != nil && opCtx.Operation != nil {
		label = g.m.operations.label(opCtx.Operation.Name)
		subscription = opCtx.Operation.Operation == ast.Subscription
	}
	if !subscription {
		if opCtx != nil && opCtx.Operation != nil {
			noteOperation(ctx, opCtx.Operation.Name)
		}
		// The operation's start is when the transport read the request, so parsing and
		// validation count too; only without it does the time start here.
		if opCtx != nil && !opCtx.Stats.OperationStart.IsZero() {
			began = opCtx.Stats.OperationStart
		}
		g.m.graphqlRequests.WithLabelValues(label).Inc()
		g.m.graphqlDuration.WithLabelValues(label).Observe(time.Since(began).Seconds())
	}
	if resp != nil {
		for _, err := range resp.Errors {
			code, _ := err.Extensions["code"].(string)
			if code == "" {
				code = "NONE"
			}
			g.m.graphqlErrors.WithLabelValues(label, code).Inc()
		}
	}
	return resp
}
