package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/events"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/skills"
)

// Skills is what the API needs of the loader, in the API's own wire types:
// the API knows nothing of the loader, and the assembly (pkg/host) converts
// the loader's status, so a field renamed there cannot reach the JSON.
type Skills interface {
	// Skills lists the binary skills, sorted by name, and the tree's own
	// problems. Each call answers a list of its own: the API adds the
	// Agent Skills from the catalog to it in place.
	Skills() SkillList
	Skill(name string) (Skill, bool)
	Rescan(ctx context.Context) error
	Ready() bool
	Disable(ctx context.Context, skill string) error
	Enable(ctx context.Context, skill string) error
	Pin(ctx context.Context, skill, version string) error
	Unpin(ctx context.Context, skill string) error
}

// Config configures the handler. Registry and Skills are required.
type Config struct {
	Registry *registry.Registry
	Skills   Skills
	Logger   hclog.Logger
	// MaxBodyBytes caps request bodies other than invoke's, whose cap is
	// the tool's own max_request_bytes plus room for the envelope.
	MaxBodyBytes int64
	// Events feeds GET /v1/events; nil disables the endpoint.
	Events *events.Bus
	// Catalog is the tree's Agent Skills (the loader's); nil lists binary skills only.
	Catalog *skills.Catalog
}

// Server serves the HTTP API.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	stopping chan struct{} // closed by Shutdown: streams end
	stopOnce sync.Once
}

// Shutdown ends the event streams, which would otherwise hold the HTTP
// server's graceful shutdown for its whole timeout. Safe to call twice.
func (s *Server) Shutdown() { s.stopOnce.Do(func() { close(s.stopping) }) }

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), stopping: make(chan struct{})}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /v1/skills", s.listSkills)
	m.HandleFunc("GET /v1/skills/{name}", s.getSkill)
	m.HandleFunc("GET /v1/skills/{name}/files/{path...}", s.skillFile)
	m.HandleFunc("GET /v1/tools", s.listTools)
	m.HandleFunc("GET /v1/tools/{name}", s.getTool)
	m.HandleFunc("POST /v1/tools/{name}/invoke", s.invoke)
	m.HandleFunc("GET /v1/openai/tools", s.openaiTools)
	m.HandleFunc("POST /v1/rescan", s.rescan)
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("POST /v1/skills/{name}/disable", s.control(func(ctx context.Context, name string, _ *http.Request) error {
		return s.cfg.Skills.Disable(ctx, name)
	}))
	m.HandleFunc("POST /v1/skills/{name}/enable", s.control(func(ctx context.Context, name string, _ *http.Request) error {
		return s.cfg.Skills.Enable(ctx, name)
	}))
	m.HandleFunc("DELETE /v1/skills/{name}/pin", s.control(func(ctx context.Context, name string, _ *http.Request) error {
		return s.cfg.Skills.Unpin(ctx, name)
	}))
	m.HandleFunc("PUT /v1/skills/{name}/pin", s.pin)
	m.HandleFunc("GET /v1/events", s.events)
	m.HandleFunc("/", s.noRoute)
}

// noRoute answers 405 (with Allow) for a known path and another method, and
// 404 otherwise, both in the one error shape.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, registry.Errorf(httpjson.CodeMethodNotAllowed,
			"%s does not take %s; it takes %s", r.URL.Path, r.Method, strings.Join(allow, ", ")))
		return
	}
	writeError(w, notFound("no endpoint %s %s; see docs/api.md", r.Method, r.URL.Path))
}

// Handle adds a route (the daemon mounts metrics, events and MCP here).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "tools": s.cfg.Registry.Snapshot().Len()})
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	list := s.cfg.Skills.Skills()
	list.Skills = s.withInstructions(list.Skills)
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getSkill(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	st, ok := s.cfg.Skills.Skill(name)
	if !ok {
		if sk, ok := s.instructionOnly(name); ok {
			writeJSON(w, http.StatusOK, sk)
			return
		}
		writeError(w, notFound("no skill named %q in the tree", name))
		return
	}
	writeJSON(w, http.StatusOK, s.withInstructions([]Skill{st})[0])
}

// queryParams are the parameters /v1/tools and /v1/openai/tools accept; any
// other is refused, so a typo (tag= for tags=) does not silently list all.
var queryParams = map[string]bool{"q": true, "tags": true, "match": true, "skills": true, "read_only": true, "limit": true}

// query reads q and limit, and the filter (tags, match, skills, read_only)
// as every face reads it. ranked reports whether any parameter was given:
// /v1/tools then answers a ranked pick in place of the plain list. A limit
// not given stays 0, and each endpoint applies its own default.
func query(r *http.Request) (q registry.Query, ranked bool, err error) {
	v := r.URL.Query()
	for k := range v {
		if !queryParams[k] {
			return q, false, badRequest("unknown query parameter %q; use q, tags, match, skills, read_only or limit", k).With("parameter", k)
		}
	}
	if q.Filter, err = registry.ParseFilter(v); err != nil {
		return q, false, err
	}
	q.Text = v.Get("q")
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > registry.MaxLimit {
			return q, false, badRequest("limit must be a whole number from 1 to %d, not %q", registry.MaxLimit, l).With("parameter", "limit")
		}
		q.Limit = n
	}
	return q, len(v) > 0, nil
}

// listTools lists every tool, or ranks them when any query parameter is
// given. A pick with text keeps the registry's default of 5; one with only
// filters lists every match (up to MaxLimit), since nothing ranks them.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	q, ranked, err := query(r)
	if err != nil {
		writeError(w, err)
		return
	}
	snap := s.cfg.Registry.Snapshot()
	out := ToolList{Tools: []Tool{}}
	if !ranked {
		for _, t := range snap.Tools() {
			out.Tools = append(out.Tools, toolOf(t))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if q.Limit == 0 && q.Text == "" {
		q.Limit = registry.MaxLimit
	}
	for _, h := range snap.SearchContext(r.Context(), q) {
		tv := toolOf(h.Tool)
		score := h.Score
		tv.Score = &score
		out.Tools = append(out.Tools, tv)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	snap := s.cfg.Registry.Snapshot()
	t, err := snap.Lookup(name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toolOf(t))
}

type invokeRequest struct {
	Arguments json.RawMessage `json:"arguments"`
}

// invokeEnvelope is room for the request envelope around the arguments.
const invokeEnvelope = 4 << 10

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	limit := registry.DefaultLimits.MaxRequestBytes
	if t, ok := s.cfg.Registry.Snapshot().Tool(name); ok {
		limit = t.Limits().MaxRequestBytes
	}
	var req invokeRequest
	if err := decodeBody(w, r, limit+invokeEnvelope, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage("{}")
	}
	res, err := s.cfg.Registry.Invoke(r.Context(), name, req.Arguments)
	if err != nil {
		writeError(w, err)
		return
	}
	writeResult(w, res)
}

// writeResult writes the invoke answer without re-encoding the result,
// which the registry has already checked is valid JSON.
func writeResult(w http.ResponseWriter, res *registry.Result) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	buf := make([]byte, 0, len(res.Result)+160)
	buf = append(buf, `{"result":`...)
	buf = append(buf, res.Result...)
	buf = append(buf, `,"tool":`...)
	buf = strconv.AppendQuote(buf, res.Tool)
	buf = append(buf, `,"skill":`...)
	buf = strconv.AppendQuote(buf, res.Skill)
	buf = append(buf, `,"version":`...)
	buf = strconv.AppendQuote(buf, res.Version)
	buf = append(buf, `,"duration_ms":`...)
	buf = strconv.AppendFloat(buf, float64(res.Duration)/float64(time.Millisecond), 'f', 3, 64)
	buf = append(buf, "}\n"...)
	w.Write(buf)
}

// rescanError words a failed rescan: the loader's own *registry.Error as it
// is, the 2-minute wait running out as a timeout (the scan went on; skills
// still act on it), the caller going away as canceled, and anything else
// (the tree unreadable, the loader closed) as internal.
func rescanError(caller context.Context, err error) *registry.Error {
	var e *registry.Error
	switch {
	case errors.As(err, &e):
		return e
	case caller.Err() != nil:
		return registry.Errorf(registry.CodeCanceled, "rescan: the caller went away")
	case errors.Is(err, context.DeadlineExceeded):
		return registry.Errorf(registry.CodeTimeout, "rescan: the tree was scanned, but not every skill acted on it within 2 minutes; see GET /v1/skills")
	default:
		return registry.Errorf(registry.CodeInternal, "rescan: %v", err)
	}
}

func (s *Server) rescan(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	if err := s.cfg.Skills.Rescan(ctx); err != nil {
		writeError(w, rescanError(r.Context(), err))
		return
	}
	s.listSkills(w, r)
}
