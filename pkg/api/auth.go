package api

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// RequireToken wraps h so that every request but GET /healthz and the
// console's static files (GET or HEAD of /ui/...) carries
// "Authorization: Bearer <token>". The comparison is constant-time.
//
// The console is exempt because a browser cannot send a bearer header when
// it loads a page, and its files hold no data: the page asks for the token
// and sends it on every API call it makes.
func RequireToken(h http.Handler, token string) http.Handler {
	return RequireTokens(h, Tokens{Admin: token})
}

// Tokens are the bearer tokens the API accepts. Admin may do everything.
// Invoke may read and call tools (and chat, and MCP) but not change what
// serves: rescan, disable, enable, pin and unpin answer 403 to it. Either
// may be empty.
type Tokens struct {
	Admin, Invoke string
}

// RequireTokens is RequireToken with separate admin and invoke tokens, so
// that an agent that may call tools cannot switch skills off.
func RequireTokens(h http.Handler, t Tokens) http.Handler {
	match := func(got, want string) bool {
		return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+want)) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || consoleFile(r) {
			h.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get("Authorization")
		admin, invoke := match(got, t.Admin), match(got, t.Invoke)
		if !admin && !invoke {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillhost"`)
			writeError(w, registry.Errorf(httpjson.CodeUnauthorized, "missing or wrong bearer token"))
			return
		}
		if !admin && adminAction(r) {
			writeError(w, registry.Errorf(registry.CodeForbidden, "%s %s needs the admin token; this token may only read and call tools", r.Method, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// adminAction reports whether r changes what serves.
func adminAction(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/v1/rescan" || p == "/v1/flows/reload" || strings.HasPrefix(p, "/v1/skills/")
}

// consoleFile reports whether r reads the console's static files. It is
// judged on the escaped path, which the router matches, and refuses dot
// segments (plain or encoded), so no "/ui/../" or "/x/%2e%2e/ui/" trick
// lets a request past the token to anything but the console.
func consoleFile(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.EscapedPath()
	if p != "/ui" && !strings.HasPrefix(p, "/ui/") {
		return false
	}
	return !strings.Contains(r.URL.Path, "/.")
}

// ReadToken reads a token file: the first line, trimmed. It refuses a file
// others can read (the token guards the whole API) and a token shorter
// than 16 characters.
func ReadToken(path string) (string, error) {
	tok, err := fileio.ReadSecret(path, "token file")
	if err != nil {
		return "", err
	}
	if len(tok) < 16 {
		return "", fmt.Errorf("token file %s: the token must be at least 16 characters", path)
	}
	return tok, nil
}

// IsLoopback reports whether a listen address binds only to loopback. A
// host name other than localhost, or an empty host (all interfaces), is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
