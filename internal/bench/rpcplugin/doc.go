// Package rpcplugin carries the performance suite's two tools over
// go-plugin's other protocol, net/rpc (gob-encoded calls on yamux streams),
// for path (c2): the same handlers (internal/bench/tools), the same
// handshake, AutoMTLS and JSON bytes in and out as the SDK's gRPC skill, so
// that (c2) against (c) shows what gRPC itself costs. skillhost speaks gRPC
// only; this exists to measure the alternative, not to serve skills.
package rpcplugin
