// Package sse writes server-sent event streams, the one way every face of
// the host streams (GET /v1/events, POST /v1/chat with "stream": true):
// headers that keep proxies from buffering, no write deadline (a stream
// outlives the server's write timeout), a comment line as heartbeat so an
// idle stream stays open, and one lock so the heartbeat and the events
// never interleave.
package sse
