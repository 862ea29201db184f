// Package tools holds the two benchmark tools, echo and blob, as plain Go
// handlers. Every path the performance suite measures serves these same
// functions: the SDK skill (internal/benchskill), the MCP stdio server
// (internal/benchmcp) and the in-process baseline, so that the paths differ
// only in what carries the call.
//
// The argument and result types carry no jsonschema struct tags on purpose:
// the skillhost SDK (invopop/jsonschema) and the MCP go-sdk
// (google/jsonschema-go) read that tag in different formats.
package tools
