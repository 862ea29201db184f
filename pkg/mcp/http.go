package mcp

import (
	"bytes"
	"context"
	"encoding/json"
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

// Protocol 2026-07-28 (SEP-2575, SEP-2567) is sessionless: no initialize,
// no Mcp-Session-Id, the version on every request (the Mcp-Protocol-Version
// header and _meta "io.modelcontextprotocol/protocolVersion"), and change
// notifications on a subscriptions/listen request's own stream. The go-sdk
// serves it only from a handler in stateless mode, and a stateless handler
// no longer serves the session-based protocol the older clients need, so
// the face runs one handler of each kind over the same views and sends each
// request to the one that speaks its version.
const (
	modernVersion   = "2026-07-28" // the first sessionless version
	metaProtocolKey = "io.modelcontextprotocol/protocolVersion"
	methodListen    = "subscriptions/listen"
	methodDiscover  = "server/discover"
	headerProtocol  = "Mcp-Protocol-Version"
	headerSessionID = "Mcp-Session-Id"
)

// httpFace wraps the go-sdk's streamable handlers with what the daemon needs
// around them: per-filter views, cross-origin protection, deadlines that suit
// long-lived streams, and a drain that ends listening streams at shutdown.
type httpFace struct {
	s         *Server
	sdk       *mcpsdk.StreamableHTTPHandler // sessions: protocol versions up to 2025-11-25
	stateless *mcpsdk.StreamableHTTPHandler // no sessions: 2026-07-28 and later
	cop       *http.CrossOriginProtection

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
	getServer := func(r *http.Request) *mcpsdk.Server {
		if v, ok := r.Context().Value(viewKey{}).(*view); ok {
			return v.srv
		}
		return nil
	}
	h.sdk = mcpsdk.NewStreamableHTTPHandler(getServer, opts)
	h.stateless = mcpsdk.NewStreamableHTTPHandler(getServer, &mcpsdk.StreamableHTTPOptions{
		Stateless: true, Logger: s.slog, MaxRequestBodyBytes: maxBodyBytes,
		// A sessionless request lives exactly as long as its POST: a
		// client that hangs up cancels its call (and ends its listen).
		PropagateRequestCancellation: true,
	})
	return h
}

// peekRequest reads what routing needs from a POST body: the method and the
// protocol version in _meta. A body that does not parse as one request
// (a batch, garbage) gives empty strings; the go-sdk then answers it.
func peekRequest(body []byte) (method, metaVersion string) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", ""
	}
	v, _ := m.Params.Meta[metaProtocolKey].(string)
	return m.Method, v
}

// isModern reports whether a request speaks the sessionless protocol.
func isModern(version string) bool { return version >= modernVersion }

func (h *httpFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Browsers: a page on another origin must not drive the tools of a
	// daemon on localhost. Other clients send no Origin and pass.
	if err := h.cop.Check(r); err != nil {
		writeError(w, registry.Errorf(registry.CodeForbidden, "cross-origin request refused: %v", err))
		return
	}
	e, err := ParseEndpoint(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	if !r.URL.Query().Has(ParamDiscovery) {
		e.Discovery = h.s.cfg.Discovery
	}
	rc := http.NewResponseController(w)
	// A stream (GET, a subscriptions/listen, or a POST answered as an event
	// stream while a tool runs) may outlive the server's read and write
	// timeouts, which are meant for ordinary requests. The body is read
	// first, bounded, so that dropping the read deadline cannot let a slow
	// client hold the read.
	rc.SetWriteDeadline(time.Time{})
	var method, metaVersion string
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
		method, metaVersion = peekRequest(body)
	}
	rc.SetReadDeadline(time.Time{})
	sid := r.Header.Get(headerSessionID)
	// A request without a session that carries a sessionless version, in
	// its header or its _meta (the go-sdk then checks that both agree),
	// goes to the stateless handler; everything else is the session
	// protocol, initialize included.
	modern := r.Method == http.MethodPost && sid == "" &&
		(isModern(r.Header.Get(headerProtocol)) || isModern(metaVersion))
	stream := r.Method == http.MethodGet || (modern && method == methodListen)
	// server/discover is where a sessionless client starts, as initialize
	// is for the others: both are refused while draining.
	newSession := r.Method == http.MethodPost && sid == "" && (!modern || method == methodDiscover)
	if (stream || newSession) && h.isDraining() {
		writeError(w, shuttingDown())
		return
	}
	var v *view
	if newSession && e.Discovery != DiscoveryOff {
		// What a discovery session loads is its own: it gets its own
		// go-sdk server. Later requests of the session find it by their
		// Mcp-Session-Id; the view passed along with them only answers
		// the go-sdk's version check.
		v, err = h.s.sessionView(e)
	} else {
		v, err = h.s.httpView(e)
	}
	if errors.Is(err, errClosed) {
		writeError(w, shuttingDown())
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := context.WithValue(r.Context(), viewKey{}, v)
	if stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		id, ok := h.track(sid, cancel)
		if !ok {
			writeError(w, shuttingDown())
			return
		}
		defer h.untrack(id)
	}
	if modern {
		h.stateless.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	if r.Method == http.MethodPost && sid != "" {
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
