package registry

import (
	"errors"
	"fmt"
)

// Code is a stable, documented error code. Callers (and models) branch on
// it; the message is for people.
type Code string

// The codes every caller may see, whatever the face. Codes only a face
// answers with (unauthorized, method_not_allowed, the agent's) and every
// code's HTTP status live with the faces, in internal/httpjson: the
// registry knows nothing of HTTP.
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
	CodeForbidden        Code = "forbidden"          // a Permit refused the tool
	CodeNotFound         Code = "not_found"          // no such skill or version (the loader's operator actions)
	CodeBadRequest       Code = "bad_request"        // a request that cannot be read: a bad filter, a pin the version refuses
	CodeInternal         Code = "internal"           // anything else
)

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
