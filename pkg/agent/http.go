package agent

import (
	"errors"
	"net/http"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/internal/sse"
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
	stream := sse.New(w, a.cfg.Heartbeat)
	resp, err := a.Run(r.Context(), req, func(e Event) { sendEvent(stream, e.Type, e) })
	stream.Stop()
	switch {
	case err != nil && !stream.Started():
		writeError(w, err)
	case err != nil:
		sendEvent(stream, EventError, httpjson.ErrorBody{Error: registry.AsError(err)})
	default:
		sendEvent(stream, EventDone, resp)
	}
}

// sendEvent sends one event of a run; one that cannot be encoded is sent
// as an error event in its place, so the client learns of it.
func sendEvent(stream *sse.Writer, t EventType, v any) {
	if err := stream.Event(string(t), v); err != nil && !errors.Is(err, sse.ErrGone) {
		stream.Event(string(EventError), httpjson.ErrorBody{Error: registry.Errorf(registry.CodeInternal, "%v", err)})
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
