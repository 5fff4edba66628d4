package cache

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans of Redis commands.
const tracerName = "github.com/msggate/msggate/internal/cache"

// tracingHook makes a client span of each command and each pipeline made within a sampled
// trace (a loader batch, a send, a relay step), named after the command ("get") or the
// pipeline's commands ("pipeline mget hgetall"), after OpenTelemetry's database conventions.
// Arguments are never recorded: they hold messages and IDs.
//
// go-redis's own redisotel was tried first: it renders every pipeline's full command text
// (rediscmd.CmdsString) whether or not the text is recorded, and makes a span for every
// command, sampled or not. In the bench's warm page at 1% sampling that rendering alone was
// about 3% of the process's CPU time. Commands outside a sampled trace (a request not sampled,
// the background loops) cost a context lookup here, nothing more.
type tracingHook struct {
	tracer trace.Tracer
	attrs  []attribute.KeyValue
}

func newTracingHook(tp trace.TracerProvider, rdb redis.UniversalClient) tracingHook {
	attrs := []attribute.KeyValue{attribute.String("db.system.name", "redis"), attribute.String("db.system", "redis")}
	if c, ok := rdb.(*redis.Client); ok {
		opt := c.Options()
		if host, port, err := net.SplitHostPort(opt.Addr); err == nil {
			attrs = append(attrs, attribute.String("server.address", host))
			if p, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, attribute.Int("server.port", p))
			}
		}
		attrs = append(attrs, attribute.String("db.namespace", strconv.Itoa(opt.DB)))
	}
	return tracingHook{tracer: tp.Tracer(tracerName), attrs: attrs}
}

func (tracingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h tracingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return next(ctx, cmd)
		}
		name := cmd.Name()
		ctx, span := h.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(h.attrs...), trace.WithAttributes(attribute.String("db.operation.name", name)))
		defer span.End()
		return endSpan(span, next(ctx, cmd))
	}
}

func (h tracingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return next(ctx, cmds)
		}
		// The distinct commands, in order: "pipeline get mget".
		var names []string
		for _, c := range cmds {
			if n := c.Name(); len(names) == 0 || !contains(names, n) {
				names = append(names, n)
			}
		}
		ctx, span := h.tracer.Start(ctx, "pipeline "+strings.Join(names, " "), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(h.attrs...), trace.WithAttributes(attribute.String("db.operation.name", "pipeline"),
				attribute.Int("db.operation.batch.size", len(cmds))))
		defer span.End()
		return endSpan(span, next(ctx, cmds))
	}
}

// endSpan marks span failed when err is a failure (a missing key is an answer) and returns err.
func endSpan(span trace.Span, err error) error {
	if err != nil && err != redis.Nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "redis command failed")
	}
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
