package im

import (
	"errors"
	"fmt"
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
)

// Error is an error with a code from the list above and a message that is safe to show to the
// client. Anything that is not an *Error is treated as EINTERNAL and never shown.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

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
