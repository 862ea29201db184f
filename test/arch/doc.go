// Package arch holds the architecture test: it reads the real import graph
// with `go list -deps` and fails when a package of ours imports against the
// direction docs/architecture.md draws, or when a core package pulls in a
// library that belongs to one face (OpenAI, MCP, Prometheus). The rules are
// a table in the test, so a new edge is a decision someone makes in a diff,
// not an accident found later.
package arch
