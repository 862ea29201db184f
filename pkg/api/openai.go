package api

import (
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry/openaitools"
)

type openaiToolsBody struct {
	Tools []openai.Tool `json:"tools"`
}

// openaiTools returns the same pick as /v1/tools as a tools payload ready
// for an OpenAI-compatible chat completion request. Without a limit it is
// the registry's default of 5, with or without text: this payload goes to
// a model, which should see a few tools, not the catalog.
func (s *Server) openaiTools(w http.ResponseWriter, r *http.Request) {
	q, _, err := query(r)
	if err != nil {
		writeError(w, err)
		return
	}
	hits := s.cfg.Registry.Snapshot().SearchContext(r.Context(), q)
	writeJSON(w, http.StatusOK, openaiToolsBody{Tools: openaitools.Tools(hits)})
}
