// Package api is skillhost's HTTP face: the JSON API of DESIGN.md over the
// registry and the loader. Every error leaves in the one shape
// {"error": {"code", "message", "retryable", "details"}} with the status its
// code maps to, so a client branches on codes, never on message text.
//
// The JSON is the package's own wire types ([SkillList], [Skill], [Tool],
// ...), converted from the registry's here and from the loader's by the
// assembly (pkg/host), which hands the API a [Skills] that speaks only these
// types; the package imports neither the loader nor the manifest. The types
// mirror the originals field for field on purpose: the copy is what lets a
// loader or registry field change without changing the public API, and
// clients (the CLI) decode these types. testdata/*.golden pins the JSON.
//
// Handlers hold no state of their own: a request reads one registry
// snapshot and works on it, and operator actions go to the loader through
// [Skills].
package api
