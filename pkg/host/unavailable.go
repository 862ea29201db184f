package host

import (
	"net/http"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// mountUnavailable answers every request under the prefixes with code and
// the reason the face could not open what it keeps, so that the rest of
// the host serves: a face whose files cannot be written (a read-only or
// full state folder) must not take the tools down with it.
func mountUnavailable(m *Mount, face string, code registry.Code, err error, prefixes ...string) {
	m.Logger.Error(face+" are unavailable on this host; it serves without them", "error", err)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, registry.Errorf(code, "%s are unavailable on this host: %v", face, err))
	})
	for _, p := range prefixes {
		m.Handle(p, h)
		m.Handle(p+"/", h)
	}
}
