// Package httpjson is the JSON plumbing every HTTP face of skillhost shares
// (the API, MCP over HTTP, the agent loop): strict request decoding, the
// codes only a face answers with, the one table of every code's HTTP
// status, and answers in the one error shape, so that each face refuses
// the same thing with the same words and the same status.
package httpjson
