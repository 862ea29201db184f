package api

import (
	"net"
	"net/http"
	"strings"

	"github.com/skillhost/skillhost/pkg/registry"
)

// GuardBrowsers refuses the two ways a web page the operator happens to
// visit could reach a daemon on their machine:
//
//   - A cross-origin request that changes something (a POST, PUT or
//     DELETE whose Sec-Fetch-Site or Origin names another site): a page
//     can send a "simple" POST to 127.0.0.1 without a preflight, which
//     would disable a skill, rescan or invoke a tool. The console, on the
//     daemon's own origin, and non-browser clients (the CLI, curl, SDKs),
//     which send neither header, pass. This is net/http's
//     CrossOriginProtection, which the MCP face uses too.
//   - With loopbackOnly (a loopback listener and no token), a request
//     whose Host is not localhost or a loopback IP: through DNS rebinding
//     a page's own name can resolve to 127.0.0.1, which the origin check
//     cannot see, and let it read every answer. A token guards that case
//     instead, since a page does not have it.
func GuardBrowsers(next http.Handler, loopbackOnly bool) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			writeError(w, registry.Errorf(registry.CodeForbidden,
				"cross-origin request refused: %v; the API answers the console's own origin and clients that are not browsers", err))
			return
		}
		if loopbackOnly && !loopbackHost(r.Host) {
			writeError(w, registry.Errorf(registry.CodeForbidden,
				"request for host %q refused: this daemon listens on loopback without a token and answers only requests addressed to localhost or a loopback IP; set --token-file to serve other names", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
