package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Handler serves POST /v1/chat: a Request as JSON, answered with the
// Response, or with "stream": true as server-sent events (see docs/agent.md):
//
//	event: start | delta | tool_call_started | tool_call_finished | notice
//	data: {Event}
//	...
//	event: done          event: error
//	data: {Response}     data: {"error": {...}}
//
// Problems found before the run starts (a bad body, an unknown profile, no
// model, a first request over budget) are answered as a plain JSON error
// with its status even when streaming was asked for; once the stream has
// begun, errors arrive as its error event.
func (a *Agent) Handler() http.Handler { return http.HandlerFunc(a.serveChat) }

func (a *Agent) serveChat(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := decodeBody(w, r, a.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	if !req.Stream {
		resp, err := a.Run(r.Context(), req, nil)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	sse := &sseWriter{w: w, rc: http.NewResponseController(w), heartbeat: a.cfg.Heartbeat}
	resp, err := a.Run(r.Context(), req, sse.event)
	sse.stopHeartbeat()
	switch {
	case err != nil && !sse.started:
		writeError(w, err)
	case err != nil:
		sse.write(EventError, httpjson.ErrorBody{Error: registry.AsError(err)})
	default:
		sse.write(EventDone, resp)
	}
}

// sseWriter writes one event stream. The response is committed (200,
// text/event-stream) at the first event, so that a run failing before it
// starts can still answer a proper status. Writes come from the run's emit
// (serialized by the run) and from the heartbeat goroutine.
type sseWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	heartbeat time.Duration

	mu      sync.Mutex // guards the writer and the fields below
	started bool
	failed  bool // a write failed: the client is gone
	stop    chan struct{}
	done    chan struct{}
}

func (s *sseWriter) event(e Event) { s.write(e.Type, e) }

func (s *sseWriter) write(t EventType, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(httpjson.ErrorBody{Error: registry.Errorf(registry.CodeInternal, "encoding a %s event: %v", t, err)})
		t = EventError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.start()
	}
	if s.failed {
		return
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", t, b); err != nil {
		s.failed = true
		return
	}
	s.rc.Flush()
}

// start commits the response and starts the heartbeat. s.mu is held.
func (s *sseWriter) start() {
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	s.w.WriteHeader(http.StatusOK)
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.beat(s.stop, s.done)
}

func (s *sseWriter) beat(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.failed {
				if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
					s.failed = true
				} else {
					s.rc.Flush()
				}
			}
			s.mu.Unlock()
		}
	}
}

// stopHeartbeat stops the heartbeat and waits for it; safe to call when it
// never started, and twice.
func (s *sseWriter) stopHeartbeat() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// writeError answers err in the one error shape, with the status of its
// code.
func writeError(w http.ResponseWriter, err error) { httpjson.WriteError(w, err) }

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// decodeBody decodes a JSON body into v: size-limited, unknown fields
// refused, exactly one value, a JSON content type or none.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return httpjson.Decode(w, r, limit, v, `expected {"messages": [{"role": "user", "content": "..."}]}`)
}
