// Package mcp is skillhost's Model Context Protocol face: every tool in the
// registry, served to any MCP client, with a tool list that follows hot
// reloads, crashes and operator decisions as they happen.
//
// A [Server] mirrors the registry into one go-sdk server per tool filter
// (a "view": the whole catalog, or the subset a ?tags=, ?skills= or
// ?read_only= query asks for). tools/list answers from that mirror, which a
// watcher keeps in step with [registry.Registry.Changed]: after each burst
// of publications (debounced, 200 ms by default) it diffs the registry's
// tools against what the view holds and adds, replaces or removes only what
// changed, so connected clients get one notifications/tools/list_changed per
// real change and none for a publication that changed nothing they see. A
// tools/list or tools/call that arrives inside the debounce window syncs its
// view first, so the next list after a change is always current.
//
// tools/call never takes a shortcut: it goes through [registry.Registry.Invoke],
// the same path as the HTTP API, with its validation, limits, lease and
// drain. Every registry error except unknown_tool comes back as a tool
// result with isError set, the message as text ("code: message") and the
// whole error under _meta "io.skillhost/error", so a model can read the
// reason and correct itself; unknown_tool is a JSON-RPC invalid-params error,
// as the MCP specification asks for unknown tools. Results are returned as
// text (the JSON, or the string itself for a string result) plus
// structuredContent.
//
// Tools of a skill that is restarting after a crash are left out of the list
// (unless [Config.ShowUnavailable]), in line with the rule that unavailable
// tools are never offered to a model; the change is announced both ways, so
// the drop is never silent, and a call that still names such a tool gets a
// retryable skill_unavailable result rather than "unknown tool".
//
// An endpoint in discovery mode ([DiscoverySearch], ?discovery=search)
// lists find_tools, load_tools and call_tool instead of its tools; each
// session has its own go-sdk server, so the tools it loads join its list
// alone, always within the endpoint's filter. With [Config.Skills],
// instruction skills are resources (skill://<name>/<path>) under the MCP
// skills extension, following the catalog's hot reloads.
//
// Protocol 2026-07-28 (sessionless) is served beside the session protocol
// of the older versions: the HTTP face routes each request to a stateful or
// a stateless go-sdk handler over the same servers.
//
// Faces: [Server.Handler] serves streamable HTTP (the daemon mounts it at
// /mcp), [Server.ServeTransport] serves one session over any go-sdk
// transport (stdio for a desktop client), and [ServeBridge] serves a stdio
// client from a running daemon's /mcp endpoint.
package mcp
