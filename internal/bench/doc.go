// Package bench is skillhost's performance suite: it measures, in one run
// on one machine, the call latency and throughput of two tools (echo, blob)
// through the skillhost HTTP API (on TCP and on a unix socket), the
// registry's Go invoke, a bare go-plugin client (gRPC, and net/rpc beside
// it), an MCP stdio server
// built with the official go-sdk, a plain in-process call, a bare net/http
// server process (the floor of one HTTP hop) and a bare net/http relay to a
// bare go-plugin skill (the floor of two hops, the daemon's path, with no
// skillhost code between them); then hot-swap latency
// under load, start-up and memory with 50 skills, and the registry's search
// and memory at 10,000 tools; and it records CPU profiles of the invoke
// path and of start-up.
// cmd/skillbench runs it; scripts/bench.sh builds everything and calls that.
package bench
