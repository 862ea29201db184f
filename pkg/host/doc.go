// Package host assembles the skillhost daemon from one Config and owns its
// start and stop, the way net/http.Server owns a server's: the registry,
// the loader over the skills tree, the event bus, the metrics, the HTTP API
// and the faces mounted on it (MCP, the agent loop, the console, and any
// Face a caller adds). host serve and host mcp both build their daemon
// here, so the loader is configured in one place, and cmd/host only turns
// flags into a Config.
//
// New builds everything and starts nothing it need not own yet; Start
// serves and loads; Run starts and stops on a context; Shutdown stops
// gracefully within Config.Grace and then by force, and is safe to call
// twice. A host changes its process (non-dumpable, child subreaper, a
// watchdog process) only with Config.OwnsProcess, which only a program's
// main sets: a library user or a test keeps its process as it was.
package host
