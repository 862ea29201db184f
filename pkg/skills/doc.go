// Package skills is the daemon's catalog of Agent Skills (SKILL.md folders, see pkg/skillmd)
// as they serve: one immutable Snapshot behind an atomic pointer, published whole by the
// loader after each scan and read without locks by every face (the HTTP API, the agent loop,
// MCP).
//
// Publishing applies the hot-reload rules that binary skills follow: a skill serves its newest
// valid version; an edit or a new version swaps in at the next publish; a skill whose folder is
// gone leaves the catalog; and a copy that is invalid or incomplete never replaces what served
// before: the old one keeps serving (its instructions are held in memory) and the new copy's
// problems are shown beside it. A snapshot also ranks its skills by name and description with
// the same text index the tool prefilter uses, so "the skills that fit a request" is a search.
//
// Nothing here executes anything: a snapshot hands out instructions and reads listed files
// through skillmd's capped, symlink-safe reads.
package skills
