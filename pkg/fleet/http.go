package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Handlers serve the fleet over HTTP: GET /v1/fleet (View) and GET
// /v1/fleet/events (server-sent events with the etcd revision as the id).
type Handlers struct {
	cli    *clientv3.Client
	prefix string

	mu      sync.Mutex // guards drained
	drained bool
	ctx     context.Context // ends every stream at Drain
	cancel  context.CancelFunc
}

// NewHandlers serves the fleet under prefix.
func NewHandlers(cli *clientv3.Client, prefix string) *Handlers {
	ctx, cancel := context.WithCancel(context.Background())
	return &Handlers{cli: cli, prefix: prefix, ctx: ctx, cancel: cancel}
}

// View answers the fleet's View as JSON.
func (h *Handlers) View(w http.ResponseWriter, r *http.Request) {
	v, err := ReadView(r.Context(), h.cli, h.prefix)
	if err != nil {
		httpjson.WriteError(w, registry.Errorf(registry.CodeSkillUnavailable, "%v", err))
		return
	}
	httpjson.Write(w, http.StatusOK, v)
}

// Events streams the fleet's changes. A client that sends Last-Event-ID
// (or ?after=REV) gets every change after that revision, then the live
// ones; without, it first gets a "hello" event whose id is the current
// revision, its resume point. When the revision asked for is compacted
// away, the stream sends one "error" event (code "compacted") and ends:
// read GET /v1/fleet again and follow from its revision.
func (h *Handlers) Events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpjson.WriteError(w, registry.Errorf(registry.CodeInternal, "streaming unsupported"))
		return
	}
	h.mu.Lock()
	drained := h.drained
	h.mu.Unlock()
	if drained {
		httpjson.WriteError(w, &registry.Error{Code: registry.CodeSkillUnavailable, Message: "the host is stopping", Retryable: true})
		return
	}
	var after int64
	if s := r.Header.Get("Last-Event-ID"); s != "" || r.URL.Query().Has("after") {
		if s == "" {
			s = r.URL.Query().Get("after")
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			httpjson.WriteError(w, registry.Errorf(registry.CodeBadRequest, "event id %q is not an etcd revision", s))
			return
		}
		after = n
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()

	if after == 0 {
		resp, err := h.cli.Get(ctx, h.prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			httpjson.WriteError(w, registry.Errorf(registry.CodeSkillUnavailable, "fleet: %v", err))
			return
		}
		after = resp.Header.Revision
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(id int64, event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", id, event, b); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}
	if r.Header.Get("Last-Event-ID") == "" && !r.URL.Query().Has("after") {
		if send(after, "hello", map[string]int64{"revision": after}) != nil {
			return
		}
	}
	err := Follow(ctx, h.cli, h.prefix, after+1, func(e Event) error { return send(e.Revision, e.Kind, e) })
	if errors.Is(err, ErrCompacted) {
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "compacted", "message": err.Error() + "; read GET /v1/fleet and follow from its revision"}})
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
		fl.Flush()
	}
}

// Drain ends every stream and refuses new ones.
func (h *Handlers) Drain() {
	h.mu.Lock()
	h.drained = true
	h.mu.Unlock()
	h.cancel()
}
