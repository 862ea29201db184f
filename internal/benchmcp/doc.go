// Command benchmcp serves the performance suite's two tools, echo and blob,
// as an MCP server over stdio built with the official go-sdk: the setup many
// users would pick instead of skillhost. cmd/skillbench starts it with the
// go-sdk's CommandTransport and calls it with the go-sdk client.
//
// The tools use the go-sdk's typed handlers (mcp.AddTool), as its README
// does: arguments are validated against the inferred input schema, and the
// result is sent as structuredContent plus, as the MCP spec recommends for
// older clients, the same JSON as text content.
package main
