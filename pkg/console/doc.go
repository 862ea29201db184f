// Package console is the operator console of skillhost: a small web page,
// served by the daemon at /ui/, that shows which skills and versions run,
// which failed and why, a live timeline of swaps, crashes and restarts, and
// lets an operator disable, pin or rescan skills and try a tool from a form
// generated from its input schema.
//
// The page is three embedded static files (HTML, JS, CSS: no framework, no
// CDN, no external fonts) that work offline. They hold no data: everything
// the page shows comes from the JSON API and the /v1/events stream, which it
// reads with fetch so that it can send the bearer token. That is why the
// daemon's token middleware lets GET /ui/ through without a token while
// every API call the page makes still needs one.
//
// The handler sends a strict Content-Security-Policy (only same-origin
// scripts, styles and connections; no inline code; Trusted Types required,
// so the page cannot turn strings into markup), content-addressed asset URLs
// cached for a year, and an index page that is revalidated on every load.
package console
