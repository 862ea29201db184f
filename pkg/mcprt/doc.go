// Package mcprt is the "mcp" skill runtime: it serves the tools of a stdio
// MCP server, in any language, as a skill, beside the go-plugin runtime of
// pkg/loader. A version folder whose manifest says "runtime": "mcp" holds
// the server's files (a script and its node_modules, say) and names the
// command that starts it; [Launch] turns that into a running [Instance]
// whose tools are registry specs and whose Invoke has the shape of
// registry.Backend's.
//
// What runs is what was verified: the whole folder is copied into a private
// run folder while each file is hashed, the copy's [FolderDigest] must equal
// the manifest's, and the command runs from the copy. A manifest can run
// only a file inside its folder or an interpreter the operator allowed by
// name ([Interpreters], the host's --runtime node=/usr/bin/node); absolute
// paths, ".." and PATH lookups are refused with named errors. [Copies]
// shares verified copies between instances of one digest, so a restart
// after a crash hashes its predecessor's copy again instead of copying the
// folder. The server gets no host environment (the manifest's env, plus
// PATH and HOME inside the run folder), its own process group and, on
// Linux, a parent-death signal; its stderr goes to the host's log, its
// stdout is the protocol's.
//
// The protocol is the official go-sdk client over a transport of this
// package that a third-party server cannot break: a line that is not
// JSON-RPC is logged and skipped, and a line over the size cap is streamed
// past (never held) while a small scanner finds its id, so only the call
// it answers fails, with response_too_large. A server that does not answer
// initialize in time is killed (ErrInitializeTimeout). Each tool is checked
// alone with the registry's rules, so one bad tool is refused with its
// reason ([Instance.Refused]) and the others serve. A process exit, asked
// for or not, closes [Instance.Exited]; a crash also calls Config.OnExit,
// and calls then fail with a retryable skill_unavailable. The server's
// notifications/tools/list_changed calls Config.OnToolsChanged, after which
// the loader calls [Instance.Describe] and swaps the new set in.
//
// What the loader (pkg/loader, runtime_mcp.go) keeps doing itself, as for a
// go-plugin skill: leases and draining around Invoke, restart with backoff
// when Exited closes unasked, the registry swap, status and events. The
// folder digest itself is pkg/manifest's ([manifest.FolderDigest]), so that
// the scan judges a folder by the same rule the copy is checked with.
package mcprt
