package api

import (
	"context"
	"net/http"
	"time"

	"github.com/skillhost/skillhost/pkg/registry"
)

// controlTimeout bounds how long an operator action waits for the skill to
// act on it (a launch of the pinned version, say).
const controlTimeout = 2 * time.Minute

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Skills.Ready() {
		writeError(w, registry.Errorf(registry.CodeSkillUnavailable, "the first scan of the skills tree has not settled yet"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "tools": s.cfg.Registry.Snapshot().Len()})
}

// control runs an operator action and answers with the skill's new state.
func (s *Server) control(action func(ctx context.Context, name string, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		ctx, cancel := context.WithTimeout(r.Context(), controlTimeout)
		defer cancel()
		if err := action(ctx, name, r); err != nil {
			writeError(w, err)
			return
		}
		s.getSkill(w, r)
	}
}

type pinRequest struct {
	Version string `json:"version"`
}

func (s *Server) pin(w http.ResponseWriter, r *http.Request) {
	var req pinRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Version == "" {
		writeError(w, badRequest(`pin needs {"version": "X.Y.Z"}`))
		return
	}
	s.control(func(ctx context.Context, name string, _ *http.Request) error {
		return s.cfg.Skills.Pin(ctx, name, req.Version)
	})(w, r)
}
