package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skillhost/skillhost/pkg/api"
)

// TestRequireTokenConsoleExemption checks that only reads of the console's
// static files (and /healthz) pass without the token, and that no path trick
// stretches the exemption to another route.
func TestRequireTokenConsoleExemption(t *testing.T) {
	const token = "0123456789abcdef0123"
	var reached string
	mux := http.NewServeMux()
	for _, p := range []string{"GET /healthz", "GET /ui/", "GET /v1/skills", "GET /x/", "POST /v1/rescan"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { reached = p })
	}
	h := api.RequireToken(mux, token)
	for _, c := range []struct {
		method, target, auth string
		want                 int
		reach                string
	}{
		{"GET", "/healthz", "", 200, "GET /healthz"},
		{"GET", "/ui/", "", 200, "GET /ui/"},
		{"HEAD", "/ui/app.js", "", 200, "GET /ui/"},
		{"GET", "/ui/app.css?v=0123", "", 200, "GET /ui/"},
		{"GET", "/ui/nope.txt", "", 200, "GET /ui/"},         // the console answers its own 404
		{"GET", "/ui", "", http.StatusTemporaryRedirect, ""}, // the router adds the slash
		{"POST", "/ui/", "", 401, ""},
		{"DELETE", "/ui/app.js", "", 401, ""},
		{"GET", "/v1/skills", "", 401, ""},
		{"GET", "/v1/skills", "Bearer wrong-token-0123456", 401, ""},
		{"GET", "/v1/skills", "Bearer " + token, 200, "GET /v1/skills"},
		{"POST", "/v1/rescan", "", 401, ""},
		{"GET", "/uix", "", 401, ""},
		{"GET", "/ui/../v1/skills", "", 401, ""},
		{"GET", "/ui/%2e%2e/v1/skills", "", 401, ""},
		{"GET", "/ui/./app.js", "", 401, ""},
		{"GET", "/x/%2e%2e/ui/", "", 401, ""},
		{"GET", "/x/..%2fui/", "", 401, ""},
		{"GET", "/ui%2f..%2fv1/skills", "", 401, ""},
	} {
		reached = ""
		req := httptest.NewRequest(c.method, c.target, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want || reached != c.reach {
			t.Errorf("%s %s (auth %q) = %d reaching %q, want %d reaching %q", c.method, c.target, c.auth, rec.Code, reached, c.want, c.reach)
		}
		if c.want == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", c.method, c.target)
		}
	}
}
