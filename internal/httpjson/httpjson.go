package httpjson

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Write answers v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Decode reads a JSON request body into v: at most limit bytes, unknown
// fields refused, exactly one value, and a JSON content type (or none).
// emptyHint completes the message for an empty body, e.g. `expected
// {"arguments": {...}}`. Every error is a *registry.Error.
func Decode(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyHint string) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return registry.Errorf(registry.CodeBadRequest,
				"request body must be application/json, not %q (with curl, add -H 'Content-Type: application/json')", ct).
				With("content_type", ct)
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err, limit, emptyHint)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return bodyError(err, limit, emptyHint)
		}
		return registry.Errorf(registry.CodeBadRequest, "request body must hold exactly one JSON value")
	}
	return nil
}

func bodyError(err error, limit int64, emptyHint string) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var ute *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return registry.Errorf(registry.CodeRequestTooLarge, "request body is over the %d-byte limit", limit).With("limit", limit)
	case errors.Is(err, io.EOF):
		return registry.Errorf(registry.CodeBadRequest, "request body is empty; %s", emptyHint)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return registry.Errorf(registry.CodeBadRequest, "request body is not valid JSON: it ends before the value is complete")
	case errors.As(err, &se):
		return registry.Errorf(registry.CodeBadRequest, "request body is not valid JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &ute):
		return registry.Errorf(registry.CodeBadRequest, "request body field %q must be %s, not %s", ute.Field, ute.Type, ute.Value)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return registry.Errorf(registry.CodeBadRequest, "request body did not arrive within the server's read timeout (--read-timeout); send it at once")
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return registry.Errorf(registry.CodeBadRequest, "request body has %s", strings.TrimPrefix(err.Error(), "json: "))
	default:
		return registry.Errorf(registry.CodeBadRequest, "request body: %v", err)
	}
}
