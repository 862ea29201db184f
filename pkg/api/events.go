package api

import (
	"net/http"
	"time"

	"github.com/skillhost/skillhost/internal/sse"
	"github.com/skillhost/skillhost/pkg/registry"
)

// heartbeat keeps proxies from closing an idle stream.
const heartbeat = 15 * time.Second

// events streams lifecycle and registry changes as server-sent events. A
// client first gets the current state (event "state": every skill's status
// and the recent events), so one that connects late misses nothing it
// needs; then one "lifecycle" or "registry" event per change. If the client
// reads too slowly to keep up, it gets a "lagged" event and should refetch
// /v1/skills.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Events == nil {
		writeError(w, notFound("the event stream is not enabled"))
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, registry.Errorf(registry.CodeInternal, "streaming is not supported by this connection"))
		return
	}
	sub := s.cfg.Events.Subscribe(256)
	defer sub.Close()
	stream := sse.New(w, heartbeat)
	defer stream.Stop()
	state := map[string]any{
		"skills": s.cfg.Skills.Skills().Skills, "tools": s.cfg.Registry.Snapshot().Len(),
		"recent": s.cfg.Events.Recent(), "time": time.Now(),
	}
	if stream.Event("state", state) != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping:
			stream.Event("shutdown", map[string]any{"message": "the host is shutting down"})
			return
		case e, ok := <-sub.C:
			if !ok {
				return
			}
			if sub.Lagged() {
				if stream.Event("lagged", map[string]any{"message": "events were dropped; refetch /v1/skills"}) != nil {
					return
				}
			}
			if stream.Event(e.Type, e) != nil {
				return
			}
		}
	}
}
