package server

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// OperationMetrics is what the metrics extension reports to (ops.Metrics is one). name is the
// operation's name, "" for an anonymous one.
type OperationMetrics interface {
	// SubscriptionStarted is told of a subscription once, when it starts: its answers are
	// events, and counting or timing each would say nothing about requests.
	SubscriptionStarted(ctx context.Context, name string)
	// OperationAnswered is told of every answer. chosen is false when the request failed
	// before an operation was chosen (name is then ""). The answer of a query or mutation
	// took took, from reading the request; subscription marks an event of a subscription,
	// whose time says nothing. errorCodes are the extensions.code of the answer's errors, ""
	// where an error has none.
	OperationAnswered(ctx context.Context, name string, chosen, subscription bool, took time.Duration, errorCodes []string)
	// LimitRefused is told of each refusal by a limit that guards the gateway itself rather
	// than one query's shape: the body size, the rate limits and the connection limits, by the
	// limit's name (extensions.limit).
	LimitRefused(limit string)
}

// countRefusal tells the metrics, if any, of a refusal by limit.
func (o options) countRefusal(limit string) {
	if o.Metrics != nil && limit != "" {
		o.Metrics.LimitRefused(limit)
	}
}

// metricsExtension is the gqlgen extension that reports every operation to OperationMetrics.
// NewHandler installs it before any other extension: gqlgen runs the first one outermost, so
// it then sees every answer, including those of parse, validation and limit errors.
type metricsExtension struct{ m OperationMetrics }

func (metricsExtension) ExtensionName() string                   { return "msggate metrics" }
func (metricsExtension) Validate(graphql.ExecutableSchema) error { return nil }

func (e metricsExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Subscription {
		e.m.SubscriptionStarted(ctx, op.Name)
	}
	return next(ctx)
}

// InterceptResponse runs for every answer, including DispatchError's, which never reaches
// InterceptOperation.
func (e metricsExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	began := time.Now()
	resp := next(ctx)
	var opCtx *graphql.OperationContext
	if graphql.HasOperationContext(ctx) {
		opCtx = graphql.GetOperationContext(ctx)
	}
	var name string
	chosen := opCtx != nil && opCtx.Operation != nil
	subscription := false
	if chosen {
		name = opCtx.Operation.Name
		subscription = opCtx.Operation.Operation == ast.Subscription
	}
	// The operation's start is when the transport read the request, so parsing and
	// validation count too; only without it does the time start here.
	if opCtx != nil && !opCtx.Stats.OperationStart.IsZero() {
		began = opCtx.Stats.OperationStart
	}
	var codes []string
	if resp != nil {
		for _, err := range resp.Errors {
			code, _ := err.Extensions["code"].(string)
			codes = append(codes, code)
		}
	}
	e.m.OperationAnswered(ctx, name, chosen, subscription, time.Since(began), codes)
	return resp
}
