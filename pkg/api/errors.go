package api

import (
	"net/http"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// writeError answers err in the one error shape.
func writeError(w http.ResponseWriter, err error) { httpjson.WriteError(w, err) }

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

func badRequest(format string, args ...any) *registry.Error {
	return registry.Errorf(registry.CodeBadRequest, format, args...)
}

// decodeBody decodes a JSON request body into v: size-limited, unknown
// fields refused, exactly one value, JSON content type (or none).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return httpjson.Decode(w, r, limit, v, "expected a JSON object")
}

func notFound(format string, args ...any) *registry.Error {
	return registry.Errorf(registry.CodeNotFound, format, args...)
}
