// Command benchrpc serves the performance suite's two tools, echo and blob,
// over go-plugin's net/rpc protocol (internal/bench/rpcplugin) with the
// skillhost handshake: path (c2) of cmd/skillbench, which starts it with
// plugin.NewClient as path (c) starts benchskill, to show what gRPC costs
// against net/rpc. It is not a skill: skillhost speaks gRPC only.
package main
