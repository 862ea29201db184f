// Package loader turns the skills tree into running skill processes and keeps
// the registry in step with it.
//
// One supervisor goroutine per skill owns that skill's lifecycle: it launches
// the desired version (newest valid semver, or the pinned one), describes it,
// publishes its tools to the registry in one atomic swap and only then drains
// the instance it replaced. A version that fails to start or describe never
// replaces the one serving; a crash marks the skill's tools unavailable at
// once and restarts the process with capped exponential backoff. Skills never
// wait on each other: one broken skill cannot stall another.
//
// Launching is defensive because a skill is a third-party binary: the
// entrypoint is copied to a private run folder while its sha256 is checked,
// and the copy is what runs (no check-then-exec race, no "text file busy"
// when an operator overwrites the original). The process gets only the
// manifest's environment, its own process group and, on Linux, a parent-death
// signal set from a goroutine locked to its OS thread, since Pdeathsig fires
// when the creating thread, not the process, exits.
//
// go-plugin's Kill cuts running calls after two seconds, so an instance is
// always drained (no new leases, in-flight calls finished or the grace period
// over) before Kill is called.
//
// A version whose manifest says "runtime": "mcp" is a stdio MCP server that
// pkg/mcprt runs (a verified copy of the whole folder, an interpreter the
// operator allowed by name: Config.Interpreters). It lives in the same
// instance as a go-plugin process, behind the small runtimeProc interface, so
// leases, drain, backoff, the swap and the status are one code for both; the
// server's tools/list_changed makes the supervisor describe it again.
//
// This package decides when a skill's process starts and stops; how (the
// process attributes, the verified copy, the mutual TLS keys, the watchdog
// and the orphan sweeper) is pkg/proc's. Operator decisions come from a
// StateStore.
package loader
