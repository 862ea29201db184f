package team

import (
	"errors"
	"fmt"
)

// Errors callers test with errors.Is. Each is wrapped with the team,
// member, request or task it concerns.
var (
	// ErrUnknownTeam: no team has that id.
	ErrUnknownTeam = errors.New("unknown team")
	// ErrTeamExists: Create was given an id already in use.
	ErrTeamExists = errors.New("a team with that id exists")
	// ErrTeamStopped: the team was stopped; nothing more happens in it.
	ErrTeamStopped = errors.New("team is stopped")
	// ErrInvalid: a name, message or task is malformed; the message says how.
	ErrInvalid = errors.New("invalid")
	// ErrUnknownMember: no member has that name.
	ErrUnknownMember = errors.New("no such member")
	// ErrMemberExists: Spawn was given a name already in the team (names
	// are never reused, so an old inbox never reaches a new member).
	ErrMemberExists = errors.New("a member with that name exists")
	// ErrMemberStopped: the member is stopped or shutting down.
	ErrMemberStopped = errors.New("member is stopped")
	// ErrLeadOnly: spawn, list, broadcast and shutdown requests are the
	// lead's (and the human operator's), as in the pattern's tool table.
	ErrLeadOnly = errors.New("only the lead may do this")
	// ErrUnknownRequest: a response names a request id that was never made.
	ErrUnknownRequest = errors.New("no request with that id")
	// ErrRequestAnswered: the request already has its response.
	ErrRequestAnswered = errors.New("the request is already answered")
	// ErrRequestExists: a request reuses the id of another request.
	ErrRequestExists = errors.New("a different request with that id exists")
	// ErrNotAddressee: a response from someone the request was not sent
	// to, or of the wrong type for the request.
	ErrNotAddressee = errors.New("the response does not answer that request")
	// ErrNotInPlanMode: a plan approval request from a member that is not
	// in plan mode.
	ErrNotInPlanMode = errors.New("member is not in plan mode")
	// ErrOutOfOrder: Consume was given messages that are not the next
	// ones of the inbox, in order.
	ErrOutOfOrder = errors.New("messages must be consumed in inbox order")
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = errors.New("no such task")
	// ErrTaskExists: a task reuses an id.
	ErrTaskExists = errors.New("a task with that id exists")
	// ErrUnknownDependency: a task depends on a task that does not exist.
	ErrUnknownDependency = errors.New("unknown dependency")
	// ErrDependencyCycle: tasks would depend on themselves.
	ErrDependencyCycle = errors.New("dependency cycle")
	// ErrNotClaimable: the task is done, blocked by its dependencies, or
	// held by another member whose lease has not expired.
	ErrNotClaimable = errors.New("task is not claimable")
	// ErrHoldsTask: a member holds at most one task at a time.
	ErrHoldsTask = errors.New("member already holds a task")
	// ErrNotClaimant: only the member holding a task completes, fails or
	// renews it.
	ErrNotClaimant = errors.New("member does not hold the task")
	// ErrBudgetExceeded: the member or the team spent its token budget.
	ErrBudgetExceeded = errors.New("token budget exceeded")
	// ErrTimeout: WaitTasks or WaitMembers ran out of time first.
	ErrTimeout = errors.New("timed out waiting")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("closed")
)

// BounceError is Send's error when the recipient is unknown or stopped.
// The bounce message (with the same reason) is also in the sender's inbox
// when the sender is a member, so a loop that ignores the error still
// learns of it.
type BounceError struct {
	To     string
	Reason string
	Err    error // ErrUnknownMember or ErrMemberStopped
}

func (e *BounceError) Error() string {
	return fmt.Sprintf("message to %q bounced: %s", e.To, e.Reason)
}

func (e *BounceError) Unwrap() error { return e.Err }

// ErrorCode is the code of the host's error shape for an error of this
// package (the API answers with it, and a team tool's failed result
// carries it): "bad_request" for what is not the team's own.
func ErrorCode(err error) string { return string(apiError(err).Code) }
