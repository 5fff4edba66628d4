package server

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans the GraphQL boundary makes (operations, loader batches).
const tracerName = "github.com/msggate/msggate/graph"

// Span attributes of an operation, after OpenTelemetry's GraphQL conventions. The document and
// the variables are never recorded: they hold what users write (a message's content, the IDs
// of their conversations), and traces are read by operators.
const (
	attrOperationType = "graphql.operation.type"
	attrOperationName = "graphql.operation.name"
	attrErrorCodes    = "graphql.error.codes"
)

// tracingExtension makes a span for each GraphQL operation a client runs, named by its type
// and name ("query History"): the HTTP request's span is its parent, and the loaders'
// batches, and through them the Redis and MongoDB commands, are its children. A subscription
// gets one span for its start (its resolver: the subscription's catch-up reads follow from
// it) and one per event delivered, child of that one. Installed only when tracing is on, and
// then spans only operations of sampled traces: an operation of a request not sampled
// costs a context lookup.
type tracingExtension struct{ tracer trace.Tracer }

func (tracingExtension) ExtensionName() string                   { return "msggate tracing" }
func (tracingExtension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation spans a subscription's start: a query's or a mutation's work happens
// when its response is made (InterceptResponse), a subscription's resolver runs here.
func (e tracingExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil || op.Operation != ast.Subscription || !trace.SpanContextFromContext(ctx).IsSampled() {
		return next(ctx)
	}
	ctx, span := e.tracer.Start(ctx, spanName(op), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(operationAttributes(op)...))
	defer span.End()
	return next(ctx)
}

// InterceptResponse spans a query or a mutation (and one event of a subscription), from the
// execution of its fields to its answer. It runs for answers refused before an operation was
// chosen too (parse errors, the limits), which get a span named as no operation.
func (e tracingExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return next(ctx)
	}
	var op *ast.OperationDefinition
	if graphql.HasOperationContext(ctx) {
		op = graphql.GetOperationContext(ctx).Operation
	}
	name := "GraphQL Operation"
	var attrs []attribute.KeyValue
	if op != nil {
		name, attrs = spanName(op), operationAttributes(op)
		if op.Operation == ast.Subscription {
			name += " event"
		}
	}
	ctx, span := e.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	defer span.End()
	resp := next(ctx)
	if resp != nil && len(resp.Errors) > 0 && span.IsRecording() {
		codeList := make([]string, len(resp.Errors))
		for i, err := range resp.Errors {
			code, _ := err.Extensions["code"].(string)
			codeList[i] = code
		}
		span.SetAttributes(attribute.StringSlice(attrErrorCodes, codeList))
		// The codes, not the messages: a message may quote what the client sent.
		span.SetStatus(codes.Error, strings.Join(codeList, ","))
	}
	return resp
}

func spanName(op *ast.OperationDefinition) string {
	if op.Name == "" {
		return string(op.Operation)
	}
	return string(op.Operation) + " " + op.Name
}

func operationAttributes(op *ast.OperationDefinition) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String(attrOperationType, string(op.Operation))}
	if op.Name != "" {
		attrs = append(attrs, attribute.String(attrOperationName, op.Name))
	}
	return attrs
}
