package im

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Error codes shared by every layer. The GraphQL boundary maps each to one extensions.code.
const (
	EINVALID         = "invalid"         // bad input from the client
	ENOTFOUND        = "not_found"       // the thing named does not exist
	EFORBIDDEN       = "forbidden"       // the caller may not see or change it
	EUNAUTHENTICATED = "unauthenticated" // no caller, or a caller we cannot verify
	ELIMIT           = "limit_exceeded"  // a client-controlled size is above its bound
	EUNAVAILABLE     = "unavailable"     // a store is unreachable; retrying may help
	ECONFLICT        = "conflict"        // a concurrent change won; retrying may help
	EINTERNAL        = "internal"        // a bug or an unexpected store answer
	// EHISTORY: the seqs asked for lie below the reader's min seq: deleted by retention or
	// cleared. Not "no messages": the history existed and is gone for this reader.
	EHISTORY = "history_unavailable"
	// EREADONLY: the gateway serves a store it must not change (an OpenIM deployment); the
	// request changed nothing.
	EREADONLY = "read_only"
	// EUNSUPPORTED: the store behind the gateway keeps nothing to answer the request from (an
	// OpenIM deployment keeps no per-user event log); asking again will not help.
	EUNSUPPORTED = "unsupported"
)

// Error is an error with a code from the list above and a message that is safe to show to the
// client. Anything that is not an *Error is treated as EINTERNAL and never shown.
type Error struct {
	Code    string
	Message string
	// Cause is the underlying error, kept for logs; it is never shown to a client.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Unavailable wraps a store failure that a retry may cure (network, timeout). The message names
// the store; the cause stays in logs.
func Unavailable(store string, cause error) *Error {
	return &Error{Code: EUNAVAILABLE, Message: store + " is unavailable", Cause: cause}
}

// Errorf builds an *Error with a formatted, client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any other error
// and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err, or a generic text for errors that may
// carry internals.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Transient reports whether err says that a store could not be reached or did not answer in
// time, as opposed to a bug or a refused request: a context that ended, a connection refused,
// reset or cut (EOF), a network timeout. Adapters add what only their driver can tell; the
// GraphQL boundary uses it for errors that reached it without a code, so that an outage never
// reads as INTERNAL.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true // a dial or read that failed: *net.OpError, *net.DNSError, timeouts
	}
	var hinted interface{ RetryHint() time.Duration }
	return errors.As(err, &hinted) // an admission refusal
}

// RetryHint is the retry hint err carries (an admission refusal's), or 0.
func RetryHint(err error) time.Duration {
	var hinted interface{ RetryHint() time.Duration }
	if errors.As(err, &hinted) {
		return hinted.RetryHint()
	}
	return 0
}
