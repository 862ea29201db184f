package agent

import (
	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// The codes the agent adds to the registry's. They share its error shape,
// {"error": {"code", "message", "retryable", "details"}}, and their HTTP
// statuses are in the one table every face answers from
// (internal/httpjson).
const (
	// CodeUnconfigured: no model is configured for the profile (the host
	// was started without --llm-model and the profile names none). 503,
	// not retryable: only an operator can fix it.
	CodeUnconfigured = httpjson.CodeAgentUnconfigured
	// CodeModelUnavailable: the model endpoint failed transiently (429,
	// 5xx, timeout, connection) on every attempt. 503, retryable.
	CodeModelUnavailable = httpjson.CodeModelUnavailable
	// CodeModelError: the model endpoint refused the request for good
	// (401/403: the API key; other 4xx: the request), or answered
	// something that is not a chat completion. 502: the fault is upstream
	// of skillhost, and a 401 here must not read as "your skillhost token
	// is wrong".
	CodeModelError = httpjson.CodeModelError
	// CodeContextBudget: the estimated prompt is over the profile's
	// context_budget. 413.
	CodeContextBudget = httpjson.CodeContextBudget
)

func agentError(code registry.Code, retryable bool, format string, args ...any) *registry.Error {
	e := registry.Errorf(code, format, args...)
	e.Retryable = retryable
	return e
}
