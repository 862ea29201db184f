package agent

import (
	"net/http"

	"github.com/skillhost/skillhost/pkg/registry"
)

// The codes the agent adds to the registry's. They share its error shape,
// {"error": {"code", "message", "retryable", "details"}}; [HTTPStatus] maps
// them and defers to [registry.Code.HTTPStatus] for the rest.
const (
	// CodeUnconfigured: no model is configured for the profile (the host
	// was started without --llm-model and the profile names none). 503,
	// not retryable: only an operator can fix it.
	CodeUnconfigured registry.Code = "agent_unconfigured"
	// CodeModelUnavailable: the model endpoint failed transiently (429,
	// 5xx, timeout, connection) on every attempt. 503, retryable.
	CodeModelUnavailable registry.Code = "model_unavailable"
	// CodeModelError: the model endpoint refused the request for good
	// (401/403: the API key; other 4xx: the request), or answered
	// something that is not a chat completion. 502: the fault is upstream
	// of skillhost, and a 401 here must not read as "your skillhost token
	// is wrong".
	CodeModelError registry.Code = "model_error"
	// CodeContextBudget: the estimated prompt is over the profile's
	// context_budget. 413.
	CodeContextBudget registry.Code = "context_budget_exceeded"
)

// HTTPStatus is the status POST /v1/chat answers for code.
func HTTPStatus(code registry.Code) int {
	switch code {
	case CodeUnconfigured, CodeModelUnavailable:
		return http.StatusServiceUnavailable
	case CodeModelError:
		return http.StatusBadGateway
	case CodeContextBudget:
		return http.StatusRequestEntityTooLarge
	}
	return code.HTTPStatus()
}

func agentError(code registry.Code, retryable bool, format string, args ...any) *registry.Error {
	e := registry.Errorf(code, format, args...)
	e.Retryable = retryable
	return e
}
