package fleettest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an in-process OCI registry.
type Registry struct {
	// Host is its host:port (plain HTTP).
	Host string
	// tamper, when set, rewrites the body of every blob download: a
	// registry (or a network) that hands out bytes other than the ones
	// pushed.
	tamper atomic.Pointer[func([]byte) []byte]
}

// StartRegistry runs a registry until the test ends.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f := r.tamper.Load()
		if f == nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
			reg.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, req)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write((*f)(rec.Body.Bytes()))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	r.Host = u.Host
	return r
}

// Tamper makes blob downloads pass through f; nil stops it.
func (r *Registry) Tamper(f func([]byte) []byte) {
	if f == nil {
		r.tamper.Store(nil)
		return
	}
	r.tamper.Store(&f)
}

// URL is an oci+http:// URL of repository in the registry.
func (r *Registry) URL(repository string) string { return "oci+http://" + r.Host + "/" + repository }
