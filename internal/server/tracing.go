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
// costs a context lookup. It intercepts operations alone, and spans their answers by
// wrapping the handler that makes them: gqlgen makes a closure per request for each kind of
// interception an extension has, sampled or not. An answer refused before an operation was
// chosen (a parse error, the limits) has the HTTP request's span only.
type tracingExtension struct{ tracer trace.Tracer }

func (tracingExtension) ExtensionName() string                   { return "msggate tracing" }
func (tracingExtension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation spans a subscription's start around its resolver, which runs here; a
// query's or a mutation's work, and a subscription's events, happen when the handler it
// returns is called, and are spanned there.
func (e tracingExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		return next(ctx)
	}
	name := spanName(op)
	if op.Operation == ast.Subscription {
		subCtx, span := e.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(operationAttributes(op)...))
		defer span.End()
		ctx = subCtx
		name += " event"
	}
	return e.answers(next(ctx), name, operationAttributes(op))
}

// answers spans each answer responses makes, from the execution of its fields to the answer
// with its errors: the one of a query or a mutation, each event of a subscription. gqlgen
// calls the handler with the context its operation's interceptors left, so that an event's
// span is a child of its subscription's.
func (e tracingExtension) answers(responses graphql.ResponseHandler, name string, attrs []attribute.KeyValue) graphql.ResponseHandler {
	return func(ctx context.Context) *graphql.Response {
		if ctx.Err() != nil {
			// A subscription's end: no answer to span.
			return responses(ctx)
		}
		ctx, span := e.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
		defer span.End()
		resp := responses(ctx)
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
