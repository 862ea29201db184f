package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// Error codes of the runs API, beside the registry's; their HTTP statuses
// are in the one table of internal/httpjson.
const (
	CodeUnknownFlow  = httpjson.CodeUnknownFlow
	CodeUnknownRun   = httpjson.CodeUnknownRun
	CodeRunStopped   = httpjson.CodeRunStopped
	CodeNotWaiting   = httpjson.CodeNotWaiting
	CodeInvalidFlows = httpjson.CodeInvalidFlows
	CodeRunsClosed   = httpjson.CodeRunsClosed
)

const (
	maxRunBodyBytes   = 1 << 20
	sseHeartbeatEvery = 15 * time.Second
)

// API serves the runs over HTTP: POST/GET /v1/runs, GET /v1/runs/{id},
// its events as server-sent events, stop and human input, and the flows
// with their reload. Errors are the host's one error shape.
type API struct {
	e      *Engine
	reload func() error

	draining    context.Context // ends when Drain is called: event streams end
	stopStreams context.CancelFunc
	heartbeat   time.Duration
}

// NewAPI returns the API over e. reload, when set, re-reads the flows
// (POST /v1/flows/reload); it must keep the old flows on error.
func NewAPI(e *Engine, reload func() error) *API {
	a := &API{e: e, reload: reload, heartbeat: sseHeartbeatEvery}
	a.draining, a.stopStreams = context.WithCancel(context.Background())
	return a
}

// Mount adds the routes with handle (net/http.ServeMux patterns).
func (a *API) Mount(handle func(pattern string, h http.Handler)) {
	handle("POST /v1/runs", http.HandlerFunc(a.start))
	handle("GET /v1/runs", http.HandlerFunc(a.list))
	handle("GET /v1/runs/{id}", http.HandlerFunc(a.get))
	handle("GET /v1/runs/{id}/events", http.HandlerFunc(a.events))
	handle("POST /v1/runs/{id}/stop", http.HandlerFunc(a.stop))
	handle("POST /v1/runs/{id}/input", http.HandlerFunc(a.input))
	handle("GET /v1/flows", http.HandlerFunc(a.flows))
	handle("POST /v1/flows/reload", http.HandlerFunc(a.reloadFlows))
}

// Drain ends the event streams, which otherwise last as long as a run.
func (a *API) Drain() { a.stopStreams() }

// StartRequest is the body of POST /v1/runs.
type StartRequest struct {
	Flow  string `json:"flow"`
	Input string `json:"input"`
}

// InputRequest is the body of POST /v1/runs/{id}/input.
type InputRequest struct {
	Message string `json:"message"`
}

func (a *API) start(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := httpjson.Decode(w, r, maxRunBodyBytes, &req, `expected {"flow": "<name>", "input": "<the task>"}`); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Flow == "" || strings.TrimSpace(req.Input) == "" {
		writeErr(w, registry.Errorf(registry.CodeBadRequest, `both "flow" and "input" are required`))
		return
	}
	run, err := a.e.Start(req.Flow, req.Input)
	if err != nil {
		writeErr(w, apiError(err))
		return
	}
	sum := run.Summary()
	httpjson.Write(w, http.StatusCreated, sum)
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	sums, err := a.e.Store().List()
	if sums == nil {
		sums = []runs.Summary{}
	}
	out := map[string]any{"runs": sums}
	if err != nil { // some logs did not load: show the others, and say which
		out["errors"] = strings.Split(err.Error(), "\n")
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (a *API) run(w http.ResponseWriter, r *http.Request) (*runs.Run, bool) {
	run, err := a.e.Store().Run(r.PathValue("id"))
	if err != nil {
		writeErr(w, apiError(err))
		return nil, false
	}
	return run, true
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	if run, ok := a.run(w, r); ok {
		httpjson.Write(w, http.StatusOK, run.Summary())
	}
}

func (a *API) stop(w http.ResponseWriter, r *http.Request) {
	run, ok := a.run(w, r)
	if !ok {
		return
	}
	if err := a.e.Stop(run.ID(), "stopped through the API"); err != nil {
		writeErr(w, apiError(err))
		return
	}
	httpjson.Write(w, http.StatusOK, run.Summary())
}

func (a *API) input(w http.ResponseWriter, r *http.Request) {
	run, ok := a.run(w, r)
	if !ok {
		return
	}
	var req InputRequest
	if err := httpjson.Decode(w, r, maxRunBodyBytes, &req, `expected {"message": "<text>"}`); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		writeErr(w, registry.Errorf(registry.CodeBadRequest, `"message" is required`))
		return
	}
	seq, err := a.e.Input(run.ID(), req.Message)
	if err != nil {
		writeErr(w, apiError(err))
		return
	}
	// The run goes on at once, so the summary may be further along: the
	// message's seq is where a client follows it from.
	httpjson.Write(w, http.StatusAccepted, struct {
		InputSeq uint64 `json:"input_seq"`
		runs.Summary
	}{seq, run.Summary()})
}

// FlowInfo is one flow as GET /v1/flows lists it.
type FlowInfo struct {
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	Mode         Mode     `json:"mode"`
	Participants []string `json:"participants"`
}

func (a *API) flows(w http.ResponseWriter, r *http.Request) {
	set := a.e.Flows()
	out := []FlowInfo{}
	for _, n := range set.Names() {
		f, _ := set.Get(n)
		out = append(out, FlowInfo{Name: n, Description: f.Description, Mode: f.Selection.Mode, Participants: f.Names()})
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"flows": out})
}

func (a *API) reloadFlows(w http.ResponseWriter, r *http.Request) {
	if a.reload == nil {
		writeErr(w, registry.Errorf(registry.CodeBadRequest, "this host has no flows folder to reload"))
		return
	}
	if err := a.reload(); err != nil {
		writeErr(w, registry.Errorf(CodeInvalidFlows, "the flows were not reloaded; the old ones stay: %v", err).
			With("problems", strings.Split(err.Error(), "\n")))
		return
	}
	a.flows(w, r)
}

// events streams the run's events as server-sent events: id is the seq, so
// a client that reconnects with Last-Event-ID (or ?after=) misses nothing;
// the stream ends after the stop event.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	run, ok := a.run(w, r)
	if !ok {
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			writeErr(w, registry.Errorf(registry.CodeBadRequest, "Last-Event-ID (or after) %q is not an event seq", after))
			return
		}
		from = n
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, registry.Errorf(registry.CodeInternal, "the connection cannot stream"))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(a.draining, cancel)()
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	sub := run.Subscribe(from)
	for {
		wait, cancelWait := context.WithTimeout(ctx, a.heartbeat)
		ev, err := sub.Next(wait)
		cancelWait()
		switch {
		case err == nil:
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, b); err != nil {
				return
			}
			fl.Flush()
		case errors.Is(err, io.EOF):
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		default:
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", mustJSON(map[string]string{"message": err.Error()}))
			return
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// apiError maps the engine's and the store's errors to the error shape.
func apiError(err error) *registry.Error {
	var re *registry.Error
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, ErrUnknownFlow):
		return registry.Errorf(CodeUnknownFlow, "%v", err)
	case errors.Is(err, runs.ErrUnknownRun):
		return registry.Errorf(CodeUnknownRun, "%v", err)
	case errors.Is(err, runs.ErrStopped):
		return registry.Errorf(CodeRunStopped, "%v", err)
	case errors.Is(err, runs.ErrNotWaiting):
		return registry.Errorf(CodeNotWaiting, "%v", err)
	case errors.Is(err, ErrClosed), errors.Is(err, runs.ErrClosed):
		return registry.Errorf(CodeRunsClosed, "%v; the host is stopping", err)
	case errors.Is(err, ErrEmptyInput):
		return registry.Errorf(registry.CodeBadRequest, "%v", err)
	}
	return registry.AsError(err)
}

func writeErr(w http.ResponseWriter, e *registry.Error) { httpjson.WriteError(w, e) }
