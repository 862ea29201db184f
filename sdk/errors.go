package sdk

import (
	"errors"
	"fmt"
)

// Error is a structured tool error: the tool understood the request and
// refused it. Return one from a handler to give the caller (and the model) a
// stable code and say whether retrying may help. Any other error returned by a
// handler becomes an Error with code "tool_error".
type Error struct {
	Code      string
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Retryable returns an *Error that tells the caller a retry may succeed.
func Retryable(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: true}
}

// asToolError converts any handler error into an *Error.
func asToolError(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Code: "tool_error", Message: err.Error()}
}
