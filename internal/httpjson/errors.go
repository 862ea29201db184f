package httpjson

import (
	"net/http"

	"github.com/skillhost/skillhost/pkg/registry"
)

// The codes only an HTTP face answers with. The registry's own codes, which
// every caller may see whatever the face, are in pkg/registry; these are
// about the request or the agent, which the registry knows nothing of.
// pkg/agent exports the agent's under its own names.
const (
	CodeUnauthorized     registry.Code = "unauthorized"       // no or a wrong bearer token
	CodeMethodNotAllowed registry.Code = "method_not_allowed" // a known path, another method

	CodeAgentUnconfigured registry.Code = "agent_unconfigured"      // no model for the profile
	CodeModelUnavailable  registry.Code = "model_unavailable"       // the model endpoint failed transiently, every attempt
	CodeModelError        registry.Code = "model_error"             // the model endpoint refused for good
	CodeContextBudget     registry.Code = "context_budget_exceeded" // the prompt is over the profile's budget

	// The runs API's (pkg/flow exports them under its own names).
	CodeUnknownFlow  registry.Code = "unknown_flow"  // no flow of that name is loaded
	CodeUnknownRun   registry.Code = "unknown_run"   // no run of that id
	CodeRunStopped   registry.Code = "run_stopped"   // the run has ended: nothing more can be added
	CodeNotWaiting   registry.Code = "not_waiting"   // human input for a run not waiting for it
	CodeInvalidFlows registry.Code = "invalid_flows" // a reload found problems; the old flows serve
	CodeRunsClosed   registry.Code = "runs_closed"   // the host is stopping, or cannot keep runs (its state folder)

	// The teams API's (pkg/team exports them under its own names).
	CodeUnknownTeam   registry.Code = "unknown_team"   // no team of that id
	CodeUnknownMember registry.Code = "unknown_member" // no member of that name in the team
	CodeTeamExists    registry.Code = "team_exists"    // a team (or member) of that name exists
	CodeTeamStopped   registry.Code = "team_stopped"   // the team, or the member, is stopped
	CodeTeamConflict  registry.Code = "team_conflict"  // a request's state machine or the task board refuses
	CodeTeamsClosed   registry.Code = "teams_closed"   // the host is stopping
)

// statuses is every code's HTTP status, for every face: the API, MCP over
// HTTP and the agent answer one code with one status.
var statuses = map[registry.Code]int{
	registry.CodeUnknownTool:      http.StatusNotFound,
	registry.CodeNotFound:         http.StatusNotFound,
	registry.CodeInvalidArguments: http.StatusBadRequest,
	registry.CodeBadRequest:       http.StatusBadRequest,
	registry.CodeRequestTooLarge:  http.StatusRequestEntityTooLarge,
	registry.CodeOverloaded:       http.StatusTooManyRequests,
	registry.CodeSkillUnavailable: http.StatusServiceUnavailable,
	registry.CodeTimeout:          http.StatusGatewayTimeout,
	registry.CodeToolError:        http.StatusUnprocessableEntity,
	registry.CodeInvalidTool:      http.StatusUnprocessableEntity,
	registry.CodeSkillCrashed:     http.StatusBadGateway,
	registry.CodeResponseTooLarge: http.StatusBadGateway,
	registry.CodeInvalidResponse:  http.StatusBadGateway,
	registry.CodeCanceled:         499, // client closed request, as nginx names it
	registry.CodeForbidden:        http.StatusForbidden,
	registry.CodeInternal:         http.StatusInternalServerError,

	CodeUnauthorized:     http.StatusUnauthorized,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,

	// Only an operator can fix a missing model: 503, not retryable.
	CodeAgentUnconfigured: http.StatusServiceUnavailable,
	CodeModelUnavailable:  http.StatusServiceUnavailable,
	// The fault is upstream of skillhost: a 401 from the model endpoint
	// must not read as "your skillhost token is wrong".
	CodeModelError:    http.StatusBadGateway,
	CodeContextBudget: http.StatusRequestEntityTooLarge,

	CodeUnknownFlow:  http.StatusNotFound,
	CodeUnknownRun:   http.StatusNotFound,
	CodeRunStopped:   http.StatusConflict,
	CodeNotWaiting:   http.StatusConflict,
	CodeInvalidFlows: http.StatusUnprocessableEntity,
	CodeRunsClosed:   http.StatusServiceUnavailable,

	CodeUnknownTeam:   http.StatusNotFound,
	CodeUnknownMember: http.StatusNotFound,
	CodeTeamExists:    http.StatusConflict,
	CodeTeamStopped:   http.StatusConflict,
	CodeTeamConflict:  http.StatusConflict,
	CodeTeamsClosed:   http.StatusServiceUnavailable,
}

// Status is the HTTP status of code; 500 for a code it does not know.
func Status(code registry.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Codes lists every code Status knows, for tests that check an answer's
// code is a documented one.
func Codes() []registry.Code {
	out := make([]registry.Code, 0, len(statuses))
	for c := range statuses {
		out = append(out, c)
	}
	return out
}

// ErrorBody is the one error shape on the wire:
// {"error": {"code", "message", "retryable", "details"}}.
type ErrorBody struct {
	Error *registry.Error `json:"error"`
}

// WriteError answers err in the one error shape with its code's status; a
// retryable error carries Retry-After.
func WriteError(w http.ResponseWriter, err error) {
	e := registry.AsError(err)
	if e.Retryable {
		w.Header().Set("Retry-After", "1")
	}
	Write(w, Status(e.Code), ErrorBody{Error: e})
}
