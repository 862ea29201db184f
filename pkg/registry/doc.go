// Package registry is skillhost's concurrent tool registry.
//
// Readers never lock: every lookup, search and invoke works on an immutable
// [Snapshot] loaded from an atomic.Pointer. Writers (the loader, on a launch,
// swap, crash or removal) are serialized, build a new snapshot beside the
// current one and publish it in one atomic store, so a caller sees either the
// old tool set of a skill or the new one, never a mix.
//
// The registry knows nothing about processes. The loader hands it each
// skill's tools together with a [Backend], an interface defined here, and the
// registry routes calls to it through a lease: [Backend.Acquire] fails once
// the instance is draining, and [Registry.Invoke] then retries on the fresh
// snapshot, which already holds the new version. That ordering (publish the
// new snapshot first, drain the old instance second) is what lets a hot swap
// lose no call.
//
// A [Filter] (tags, skills, read-only) is what a caller may see and call;
// [ParseFilter] is the one parser every face reads it with, so the API, an
// MCP endpoint and an agent profile agree on what a filter lets through.
//
// Invoke is the one path every surface (HTTP, the agent loop, MCP) uses:
// lookup, argument validation against the compiled schema, size, concurrency
// and timeout limits, lease, call, result checks, release. Every failure is an
// [*Error] with a stable [Code].
//
// The context a Backend's Invoke receives carries the call's frame: its id,
// its tool and the permit its caller passed, linked to the frame of the call
// it was made from. A call made with that context (a skill calling another
// tool through the host) runs under the scope of every call on its chain:
// each one's permit applies, the chain is at most Config.MaxCallDepth tools
// long, and a tool already on it is refused, so a nested call can never
// reach what its original caller could not, nor loop.
package registry
