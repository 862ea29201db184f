package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestServesFilesWithTypesAndPolicy(t *testing.T) {
	h := Handler()
	for _, c := range []struct{ path, ctype string }{
		{"/ui/", "text/html; charset=utf-8"},
		{"/ui/app.js", "text/javascript; charset=utf-8"},
		{"/ui/app.css", "text/css; charset=utf-8"},
		{"/ui/favicon.svg", "image/svg+xml"},
	} {
		rec := get(t, h, "GET", c.path, nil)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != c.ctype {
			t.Errorf("GET %s = %d %q, want 200 %q", c.path, rec.Code, rec.Header().Get("Content-Type"), c.ctype)
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != CSP || !strings.HasPrefix(got, "default-src 'self';") {
			t.Errorf("GET %s: CSP %q", c.path, got)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if rec.Header().Get(k) != v {
				t.Errorf("GET %s: %s = %q, want %q", c.path, k, rec.Header().Get(k), v)
			}
		}
		if rec.Header().Get("ETag") == "" || rec.Body.Len() == 0 {
			t.Errorf("GET %s: no ETag or empty body", c.path)
		}
	}
	if rec := get(t, h, "HEAD", "/ui/app.js", nil); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD /ui/app.js = %d with %d body bytes", rec.Code, rec.Body.Len())
	}
}

// TestCaching: the index is revalidated every time, the files it points to
// are content-addressed and cached for good, and a matching ETag gets 304.
func TestCaching(t *testing.T) {
	h := Handler()
	index := get(t, h, "GET", "/ui/", nil)
	if cc := index.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("index Cache-Control = %q", cc)
	}
	refs := regexp.MustCompile(`(?:src|href)="([a-z]+\.(?:js|css|svg))\?v=([0-9a-f]{16})"`).FindAllStringSubmatch(index.Body.String(), -1)
	seen := map[string]bool{}
	for _, m := range refs {
		seen[m[1]] = true
		rec := get(t, h, "GET", "/ui/"+m[1]+"?v="+m[2], nil)
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("versioned %s: %d %q", m[1], rec.Code, rec.Header().Get("Cache-Control"))
		}
		if stale := get(t, h, "GET", "/ui/"+m[1]+"?v=0000000000000000", nil); stale.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("stale version of %s cached: %q", m[1], stale.Header().Get("Cache-Control"))
		}
		etag := rec.Header().Get("ETag")
		if nm := get(t, h, "GET", "/ui/"+m[1], map[string]string{"If-None-Match": etag}); nm.Code != http.StatusNotModified {
			t.Errorf("%s with If-None-Match %s = %d, want 304", m[1], etag, nm.Code)
		}
	}
	for _, want := range []string{"app.js", "app.css", "favicon.svg"} {
		if !seen[want] {
			t.Errorf("index does not reference a versioned %s; refs %v", want, refs)
		}
	}
}

func TestRefusesOtherPathsAndMethods(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/ui/index.html", "/ui/nope.js", "/ui/assets/app.js", "/ui/../go.mod", "/elsewhere"} {
		if rec := get(t, h, "GET", p, nil); rec.Code != 404 {
			t.Errorf("GET %s = %d, want 404", p, rec.Code)
		}
	}
	if rec := get(t, h, "POST", "/ui/", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/ = %d, want 405", rec.Code)
	}
}

// TestAssetsStaySmallAndSelfContained guards the budget and the offline
// promise: no URL to another origin, no inline script or style (which the
// CSP would block anyway), no markup built from strings.
func TestAssetsStaySmallAndSelfContained(t *testing.T) {
	total := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		total += len(b)
		s := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).FindString(s); m != "" {
			t.Errorf("%s refers to another origin: %s", p, m)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "@import", "url(http"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s uses %s", p, bad)
			}
		}
		if strings.HasSuffix(p, ".html") {
			if regexp.MustCompile(`<script(?:\s+[^>]*)?>\s*[^<\s]`).MatchString(s) || strings.Contains(s, " style=") || strings.Contains(s, "<style") || regexp.MustCompile(`\son[a-z]+=`).MatchString(s) {
				t.Errorf("%s has inline script, style or handlers", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 100<<10 {
		t.Errorf("console assets are %d bytes; keep them under 100 KiB", total)
	}
	t.Logf("console assets: %d bytes", total)
}
