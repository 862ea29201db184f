// Package runs is the durable run log behind multi-agent runs (group chats,
// graph workflows, teams): every step of a run is a typed event appended to
// a per-run JSON Lines file under the state folder, and the file, not memory,
// is the truth. An event is on disk (written and fsynced) before Append
// returns, so an engine that logs a tool call's result before it moves on
// can be killed at any moment and resumed from the log without making that
// call again: the idea of Temporal's event history, where a completed
// activity is recorded before the workflow continues and replay never runs
// it twice.
//
// Each record carries a sequence number, a time, a kind and a CRC32C, so a
// write torn by a crash is found and cut when the log is opened (only at the
// tail; damage followed by good records is reported, never silently dropped),
// in the manner of etcd's WAL and NATS JetStream's file store.
//
// A run that waits (for a human, a message) is data, not a goroutine: the
// package runs no goroutines at all. Readers follow a run with Subscribe,
// which reads the file from a sequence number on and then waits for new
// records, so a slow reader never holds up a writer and can always resume
// from the last sequence number it saw (the SSE Last-Event-ID).
//
// The pieces, bottom up: Log is one record file (append with group
// commit, check and repair on open, read back by seq) and serves any stream
// that wants these guarantees, such as a team member's inbox; State folds a
// run's events (status, transcript, usage, each tool call and its result);
// Store and Run keep the runs under <state>/runs and enforce the rules that
// keep a log meaningful (nothing after the stop, one result per call);
// Subscription follows a run. docs/flows.md describes the file format.
//
// The package knows nothing of models or HTTP: pkg/flow and pkg/team decide
// what to log; this package keeps it, replays it and serves it.
package runs
