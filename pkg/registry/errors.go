package registry

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable, documented error code. Callers (and models) branch on
// it; the message is for people.
type Code string

// The codes every caller may see. HTTPStatus gives each one's status.
const (
	CodeUnknownTool      Code = "unknown_tool"       // no such tool in the current snapshot
	CodeInvalidArguments Code = "invalid_arguments"  // arguments are not JSON or fail the input schema
	CodeRequestTooLarge  Code = "request_too_large"  // arguments exceed the skill's max_request_bytes
	CodeOverloaded       Code = "overloaded"         // the skill's max_concurrency is reached
	CodeSkillUnavailable Code = "skill_unavailable"  // crashed and restarting, retired or stopping; retryable
	CodeTimeout          Code = "timeout"            // the call outlived the skill's timeout
	CodeToolError        Code = "tool_error"         // the tool ran and refused
	CodeSkillCrashed     Code = "skill_crashed"      // the process died during the call
	CodeResponseTooLarge Code = "response_too_large" // result exceeds max_response_bytes
	CodeInvalidResponse  Code = "invalid_response"   // the skill broke the protocol (e.g. result is not JSON)
	CodeCanceled         Code = "canceled"           // the caller went away
	CodeInvalidTool      Code = "invalid_tool"       // a tool definition the registry refuses (load time)
	CodeUnauthorized     Code = "unauthorized"
	CodeForbidden        Code = "forbidden"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeBadRequest       Code = "bad_request"
	CodeInternal         Code = "internal"
)

// HTTPStatus maps a code to the status the HTTP API answers with.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeUnknownTool, CodeNotFound:
		return http.StatusNotFound
	case CodeInvalidArguments, CodeBadRequest:
		return http.StatusBadRequest
	case CodeRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeOverloaded:
		return http.StatusTooManyRequests
	case CodeSkillUnavailable:
		return http.StatusServiceUnavailable
	case CodeTimeout:
		return http.StatusGatewayTimeout
	case CodeToolError, CodeInvalidTool:
		return http.StatusUnprocessableEntity
	case CodeSkillCrashed, CodeResponseTooLarge, CodeInvalidResponse:
		return http.StatusBadGateway
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeCanceled:
		return 499 // client closed request, as nginx names it
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	default:
		return http.StatusInternalServerError
	}
}

// Error is the one error shape of skillhost. It crosses every surface as
// {"error": {"code", "message", "retryable", "details"}}.
type Error struct {
	Code      Code           `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code == CodeSkillUnavailable || code == CodeOverloaded}
}

// With returns e with a detail added (e is modified and returned, for chaining
// at construction time only).
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AsError returns err as an *Error, wrapping unknown errors as internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// CodeOf returns the code of err, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}
