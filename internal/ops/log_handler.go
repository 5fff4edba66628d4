package ops

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// WithRequestIDs returns a logger that adds request_id to every line logged with the context
// of a request (logger.InfoContext(ctx, ...) and the like), so that every part of msggate can
// be correlated with the access log without passing the ID around; and, when the context is
// in a sampled trace, trace_id and span_id, so that a line leads to its trace. A request whose
// trace is not sampled has no spans to lead to, and its lines name none: the IDs would send an
// operator looking for a trace that was never recorded, and cost each line allocations. A nil
// logger stands for slog.Default(); a logger that already adds them is returned as it is.
func WithRequestIDs(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		logger = slog.Default()
	}
	if _, ok := logger.Handler().(requestIDHandler); ok {
		return logger
	}
	return slog.New(requestIDHandler{logger.Handler()})
}

type requestIDHandler struct{ next slog.Handler }

func (h requestIDHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	id := RequestID(ctx)
	sc := trace.SpanContextFromContext(ctx)
	traced := sc.IsValid() && sc.IsSampled()
	if id != "" || traced {
		// Clone: the record may share its attribute storage with the caller's.
		r = r.Clone()
		if id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if traced {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.next.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.next.WithGroup(name)}
}
