package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every console response: nothing
// but same-origin files and connections, no inline script or style, no
// framing, no form posts, and Trusted Types so no string becomes markup.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// file is one embedded asset, ready to serve.
type file struct {
	name  string
	ctype string
	body  []byte
	etag  string // quoted, from the content hash
	hash  string // short content hash, the ?v= of versioned URLs
}

// handler serves the embedded files.
type handler struct {
	files map[string]*file // by name under /ui/, "" is the index
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler returns the console's handler. Mount it for "GET /ui/": it serves
// the page at /ui/ and its files below, and answers 404 for anything else.
func Handler() http.Handler {
	h, err := newHandler(assets)
	if err != nil {
		// The assets are compiled in; a failure here is a build mistake
		// that the package's tests catch.
		panic("console: " + err.Error())
	}
	return h
}

func newHandler(fsys fs.FS) (*handler, error) {
	h := &handler{files: map[string]*file{}}
	entries, err := fs.ReadDir(fsys, "assets")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, "assets/"+e.Name())
		if err != nil {
			return nil, err
		}
		ct, ok := contentTypes[path.Ext(e.Name())]
		if !ok {
			continue
		}
		sum := sha256.Sum256(b)
		hash := hex.EncodeToString(sum[:8])
		h.files[e.Name()] = &file{name: e.Name(), ctype: ct, body: b, hash: hash, etag: `"` + hash + `"`}
	}
	index, ok := h.files["index.html"]
	if !ok {
		return nil, fs.ErrNotExist
	}
	// Point the page at content-addressed URLs, so the files can be cached
	// for good and a new build is still picked up at once.
	var pairs []string
	for name, f := range h.files {
		if name != "index.html" {
			pairs = append(pairs, `"`+name+`"`, `"`+name+`?v=`+f.hash+`"`)
		}
	}
	body := []byte(strings.NewReplacer(pairs...).Replace(string(index.body)))
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:8])
	h.files[""] = &file{name: "index.html", ctype: index.ctype, body: body, hash: hash, etag: `"` + hash + `"`}
	delete(h.files, "index.html")
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", CSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "the console is read-only: use GET", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	f := h.files[name]
	if !ok || f == nil {
		hdr.Set("Cache-Control", "no-store")
		http.Error(w, "no console file "+r.URL.Path+"; the console is at "+Prefix, http.StatusNotFound)
		return
	}
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("ETag", f.etag)
	if name != "" && r.URL.Query().Get("v") == f.hash {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// The index (and an unversioned URL) is revalidated on every load:
		// cheap, thanks to the ETag, and a new build shows at once.
		hdr.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
}
