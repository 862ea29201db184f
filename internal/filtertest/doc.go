// Package filtertest is the one table of tool filters that every face of
// the host must read alike: the HTTP API's GET /v1/tools and
// /v1/openai/tools, an MCP endpoint's query and an agent profile. Each face
// runs [Run] with an adapter that turns a case's query parameters into its
// own request and reports the tools it offers, so a face that read
// read_only=1 as "no filter" fails here, where the others pass.
package filtertest
