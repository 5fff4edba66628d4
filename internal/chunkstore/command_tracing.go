package chunkstore

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans of MongoDB commands.
const tracerName = "github.com/msggate/msggate/internal/chunkstore"

// TracingMonitor returns a command monitor that makes a client span of each command made in
// a sampled trace (a loader batch, a send, a relay step), child of the operation's span,
// named "find msg" after OpenTelemetry's database conventions. The command's body is never recorded: it holds
// messages and IDs. A command outside a sampled trace (a request not sampled, the background
// loops) costs a context lookup, nothing more. next, when not nil, sees every event too.
//
// OpenTelemetry's own MongoDB instrumentation (otelmongo) is not served for this driver's
// major version here, so this is the small part of it msggate needs.
func TracingMonitor(next *event.CommandMonitor, tp trace.TracerProvider) *event.CommandMonitor {
	if next == nil {
		next = &event.CommandMonitor{}
	}
	tracer := tp.Tracer(tracerName)
	// The driver tells a command's start and end apart by its connection and request ID.
	type commandKey struct {
		conn string
		req  int64
	}
	var spans sync.Map // commandKey -> trace.Span
	end := func(e event.CommandFinishedEvent, failure error) {
		v, ok := spans.LoadAndDelete(commandKey{e.ConnectionID, e.RequestID})
		if !ok {
			return
		}
		span := v.(trace.Span)
		if failure != nil {
			span.RecordError(failure)
			span.SetStatus(codes.Error, "command failed")
		}
		span.End()
	}
	return &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			if !trace.SpanContextFromContext(ctx).IsSampled() {
				if next.Started != nil {
					next.Started(ctx, e)
				}
				return
			}
			// A command names its collection as the value of its first field ({find: "msg"}).
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			name := e.CommandName
			attrs := []attribute.KeyValue{
				attribute.String("db.system.name", "mongodb"),
				attribute.String("db.operation.name", e.CommandName),
				attribute.String("db.namespace", e.DatabaseName),
			}
			if coll != "" {
				name += " " + coll
				attrs = append(attrs, attribute.String("db.collection.name", coll))
			}
			attrs = append(attrs, serverAttributes(e.ConnectionID)...)
			_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			spans.Store(commandKey{e.ConnectionID, e.RequestID}, span)
			if next.Started != nil {
				next.Started(ctx, e)
			}
		},
		Succeeded: func(ctx context.Context, e *event.CommandSucceededEvent) {
			end(e.CommandFinishedEvent, nil)
			if next.Succeeded != nil {
				next.Succeeded(ctx, e)
			}
		},
		Failed: func(ctx context.Context, e *event.CommandFailedEvent) {
			end(e.CommandFinishedEvent, e.Failure)
			if next.Failed != nil {
				next.Failed(ctx, e)
			}
		},
	}
}

// serverAttributes are server.address and server.port from a driver connection ID
// ("host:27017[-3]").
func serverAttributes(connectionID string) []attribute.KeyValue {
	addr, _, _ := strings.Cut(connectionID, "[")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("server.address", host)}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attribute.Int("server.port", p))
	}
	return attrs
}
