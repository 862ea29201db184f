package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

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
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, registry.Errorf(registry.CodeInternal, "streaming is not supported by this connection"))
		return
	}
	sub := s.cfg.Events.Subscribe(256)
	defer sub.Close()
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}
	state := map[string]any{
		"skills": skillList(s.cfg.Skills.Status(), nil).Skills, "tools": s.cfg.Registry.Snapshot().Len(),
		"recent": s.cfg.Events.Recent(), "time": time.Now(),
	}
	if send("state", state) != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping:
			send("shutdown", map[string]any{"message": "the host is shutting down"})
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			fl.Flush()
		case e, ok := <-sub.C:
			if !ok {
				return
			}
			if sub.Lagged() {
				if send("lagged", map[string]any{"message": "events were dropped; refetch /v1/skills"}) != nil {
					return
				}
			}
			if send(e.Type, e) != nil {
				return
			}
		}
	}
}
