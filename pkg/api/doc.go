// Package api is skillhost's HTTP face: the JSON API of DESIGN.md over the
// registry and the loader. Every error leaves in the one shape
// {"error": {"code", "message", "retryable", "details"}} with the status its
// code maps to, so a client branches on codes, never on message text.
//
// Handlers hold no state of their own: a request reads one registry
// snapshot and works on it, and operator actions go to the loader.
package api
