package graph

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/internal/im"
)

// GraphQL error codes, in extensions.code.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeLimitExceeded   = "LIMIT_EXCEEDED"
	CodeUnavailable     = "UNAVAILABLE"
	CodeInternal        = "INTERNAL"
	// CodeHistoryUnavailable: the seqs asked for are below the viewer's min seq (deleted by
	// retention or cleared); extensions.minSeq says where readable history starts.
	CodeHistoryUnavailable = "HISTORY_UNAVAILABLE"
	// CodeReadOnly: a mutation on a gateway that serves its store read-only (OpenIM mode);
	// nothing was changed.
	CodeReadOnly = "READ_ONLY"
	// CodeUnsupported: the store behind the gateway keeps nothing to answer this from (an
	// OpenIM deployment keeps no per-user event log); asking again will not help.
	CodeUnsupported = "UNSUPPORTED"
)

var codeOf = map[string]string{
	im.EINVALID:         CodeBadUserInput,
	im.ENOTFOUND:        CodeNotFound,
	im.EFORBIDDEN:       CodeForbidden,
	im.EUNAUTHENTICATED: CodeUnauthenticated,
	im.ELIMIT:           CodeLimitExceeded,
	im.EUNAVAILABLE:     CodeUnavailable,
	im.ECONFLICT:        CodeUnavailable,
	im.EINTERNAL:        CodeInternal,
	im.EHISTORY:         CodeHistoryUnavailable,
	im.EREADONLY:        CodeReadOnly,
	im.EUNSUPPORTED:     CodeUnsupported,
}

// DefaultRetryAfter is the retry hint of an UNAVAILABLE error that carries none of its own (a
// store that is down rather than busy): long enough for a restart to make progress, short
// enough that a device notices a recovery soon. Clients add jitter.
const DefaultRetryAfter = time.Second

// RetryAfter is the retry hint of an UNAVAILABLE error: its own, else DefaultRetryAfter.
func RetryAfter(err error) time.Duration {
	if d := im.RetryHint(err); d > 0 {
		return d
	}
	return DefaultRetryAfter
}

// ErrorPresenter gives every resolver error a code. Domain errors keep their message; anything
// else is logged with its cause and answered with a generic INTERNAL error, so that no
// internals (hosts, queries, stack traces) reach a client. Errors gqlgen raised itself
// (parsing, validation) pass through with their own codes.
func ErrorPresenter(logger *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gerr := graphql.DefaultErrorPresenter(ctx, err)
		var domain *im.Error
		if !errors.As(err, &domain) {
			if _, own := err.(*gqlerror.Error); own && gerr.Extensions["code"] != nil {
				return gerr
			}
			// Before an operation exists, gqlgen's only errors are about the request itself (a
			// body that is not JSON, a query that is not a string): the client's mistake.
			if _, own := err.(*gqlerror.Error); own && !graphql.HasOperationContext(ctx) {
				gerr.Message = "the request body is not a valid GraphQL request"
				gerr.Extensions = map[string]any{"code": CodeBadUserInput}
				return gerr
			}
			domain = &im.Error{Code: im.EINTERNAL, Message: "internal error", Cause: err}
			if im.Transient(err) {
				// A store failure that reached here without a code (a context that ended, a
				// connection cut): an outage, never a bug.
				domain = im.Unavailable("a store", err)
			}
		}
		code := codeOf[domain.Code]
		if code == "" {
			code = CodeInternal
		}
		msg := domain.Message
		if code == CodeInternal || code == CodeUnavailable {
			logger.ErrorContext(ctx, "request failed", "code", code, "path", gerr.Path.String(), "err", err)
			if code == CodeInternal {
				msg = "internal error"
			}
		}
		gerr.Message = msg
		if gerr.Extensions == nil {
			gerr.Extensions = map[string]any{}
		}
		gerr.Extensions["code"] = code
		if code == CodeUnavailable {
			gerr.Extensions["retryAfterMs"] = RetryAfter(err).Milliseconds()
		}
		var gone *im.HistoryUnavailableError
		if errors.As(err, &gone) {
			gerr.Extensions["minSeq"] = gone.MinSeq
		}
		return gerr
	}
}

// RecoverFunc turns a resolver panic into an INTERNAL error (logged by the presenter).
func RecoverFunc(logger *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		logger.ErrorContext(ctx, "resolver panicked", "panic", p)
		return im.Errorf(im.EINTERNAL, "internal error")
	}
}
