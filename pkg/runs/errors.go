package runs

import "errors"

// Errors callers test with errors.Is. Each is wrapped with the run or file
// it concerns.
var (
	// ErrUnknownRun: no run has that id (or the id is not a run id).
	ErrUnknownRun = errors.New("unknown run")
	// ErrStopped: the run has a stop event; nothing may follow it.
	ErrStopped = errors.New("run is stopped")
	// ErrNotWaiting: human input was posted to a run that is not waiting for it.
	ErrNotWaiting = errors.New("run is not waiting for human input")
	// ErrUnknownCall: a tool result names a call id the log has no call for.
	ErrUnknownCall = errors.New("no tool call with that id is logged")
	// ErrDuplicateCall: a tool call reuses a call id already logged.
	ErrDuplicateCall = errors.New("a tool call with that id is already logged")
	// ErrDuplicateResult: the call already has a logged result; making it
	// again is exactly what the log exists to prevent.
	ErrDuplicateResult = errors.New("the tool call already has a logged result")
	// ErrLocked: another process (another daemon on the same state folder)
	// holds the log open for writing.
	ErrLocked = errors.New("locked by another process")
	// ErrClosed: the log or store was closed.
	ErrClosed = errors.New("closed")
)
