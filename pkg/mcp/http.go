package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// maxBodyBytes caps one HTTP message. Each skill's own max_request_bytes
// still applies to the arguments, in the registry.
const maxBodyBytes = 16 << 20

// viewKey carries the request's view from ServeHTTP to the go-sdk's
// getServer callback.
type viewKey struct{}

// httpFace wraps the go-sdk's streamable handler with what the daemon needs
// around it: per-filter views, cross-origin protection, deadlines that suit
// long-lived streams, and a drain that ends listening streams at shutdown.
type httpFace struct {
	s   *Server
	sdk *mcpsdk.StreamableHTTPHandler
	cop *http.CrossOriginProtection

	mu       sync.Mutex // guards draining, streams, nextID and inflight
	draining bool
	streams  map[uint64]openStream // open GET event streams
	nextID   uint64
	inflight map[string]int // session ID → POSTs being served (tool calls running)
}

type openStream struct {
	session string
	cancel  context.CancelFunc
}

func newHTTPFace(s *Server) *httpFace {
	h := &httpFace{
		s: s, streams: map[uint64]openStream{}, inflight: map[string]int{},
		cop: http.NewCrossOriginProtection(),
	}
	opts := &mcpsdk.StreamableHTTPOptions{Logger: s.slog, MaxRequestBodyBytes: maxBodyBytes}
	if s.cfg.SessionTimeout > 0 {
		opts.SessionTimeout = s.cfg.SessionTimeout
	}
	h.sdk = mcpsdk.NewStreamableHTTPHandler(func(r *http.Request) *mcpsdk.Server {
		if v, ok := r.Context().Value(viewKey{}).(*view); ok {
			return v.srv
		}
		return nil
	}, opts)
	return h
}

func (h *httpFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Browsers: a page on another origin must not drive the tools of a
	// daemon on localhost. Other clients send no Origin and pass.
	if err := h.cop.Check(r); err != nil {
		writeError(w, registry.Errorf(registry.CodeForbidden, "cross-origin request refused: %v", err))
		return
	}
	f, err := ParseFilter(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	stream := r.Method == http.MethodGet
	newSession := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	if (stream || newSession) && h.isDraining() {
		writeError(w, shuttingDown())
		return
	}
	v, err := h.s.httpView(f)
	if errors.Is(err, errClosed) {
		writeError(w, shuttingDown())
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	// A stream (GET, or a POST answered as an event stream while a tool
	// runs) may outlive the server's read and write timeouts, which are
	// meant for ordinary requests. The body is read first, bounded, so that
	// dropping the read deadline cannot let a slow client hold the read.
	rc.SetWriteDeadline(time.Time{})
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, registry.Errorf(registry.CodeRequestTooLarge, "request body is over the %d-byte cap", maxBodyBytes))
			} else {
				writeError(w, registry.Errorf(registry.CodeBadRequest, "reading the request body: %v", err))
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rc.SetReadDeadline(time.Time{})
	ctx := context.WithValue(r.Context(), viewKey{}, v)
	if stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		id, ok := h.track(r.Header.Get("Mcp-Session-Id"), cancel)
		if !ok {
			writeError(w, shuttingDown())
			return
		}
		defer h.untrack(id)
	}
	if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodPost && sid != "" {
		// Counted here rather than around the call itself: the answer is
		// only written once the go-sdk's handler returns.
		h.requestStarted(sid)
		defer h.requestEnded(sid)
	}
	h.sdk.ServeHTTP(w, r.WithContext(ctx))
}

func (h *httpFace) isDraining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

func (h *httpFace) track(session string, cancel context.CancelFunc) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return 0, false
	}
	h.nextID++
	h.streams[h.nextID] = openStream{session, cancel}
	return h.nextID, true
}

func (h *httpFace) untrack(id uint64) {
	h.mu.Lock()
	delete(h.streams, id)
	h.mu.Unlock()
}

func (h *httpFace) requestStarted(session string) {
	h.mu.Lock()
	h.inflight[session]++
	h.mu.Unlock()
}

// requestEnded counts a POST out; during a drain, the session's last one
// ending also ends its event stream.
func (h *httpFace) requestEnded(session string) {
	h.mu.Lock()
	h.inflight[session]--
	idle := h.inflight[session] <= 0
	if idle {
		delete(h.inflight, session)
	}
	var cancels []context.CancelFunc
	if idle && h.draining {
		cancels = h.takeStreamsLocked(func(s openStream) bool { return s.session == session })
	}
	h.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// drain refuses new sessions and streams, and ends the event streams of
// the sessions that have no call running; the others end when their last
// call does. Ending a stream while its session still waits for an answer
// would be worse than it looks: a client that fails to reconnect its
// stream (refused, since the server is stopping) may give up the whole
// session, answers in flight included.
func (h *httpFace) drain() {
	h.mu.Lock()
	h.draining = true
	cancels := h.takeStreamsLocked(func(s openStream) bool { return h.inflight[s.session] == 0 })
	h.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// closeStreams ends every event stream (Close).
func (h *httpFace) closeStreams() {
	h.mu.Lock()
	h.draining = true
	cancels := h.takeStreamsLocked(func(openStream) bool { return true })
	h.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

func (h *httpFace) takeStreamsLocked(match func(openStream) bool) []context.CancelFunc {
	var out []context.CancelFunc
	for id, s := range h.streams {
		if match(s) {
			out = append(out, s.cancel)
			delete(h.streams, id)
		}
	}
	return out
}

func shuttingDown() *registry.Error {
	return registry.Errorf(registry.CodeSkillUnavailable, "skillhost is shutting down; reconnect in a moment")
}

// writeError answers in skillhost's one error shape.
func writeError(w http.ResponseWriter, err error) { httpjson.WriteError(w, err) }
