package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Config configures a Server. Registry is required; zero values elsewhere
// take the documented defaults.
type Config struct {
	Registry *registry.Registry
	Logger   hclog.Logger

	// Name and Version identify the server to clients (serverInfo).
	// Defaults: "skillhost" and the module version of the binary.
	Name, Version string
	// Instructions are sent to clients at initialization. Default: a short
	// note on names, list changes and retryable errors.
	Instructions string

	// Debounce is how long the watcher lets registry publications gather
	// before it resyncs the tool lists, so that a reload that swaps three
	// skills costs clients one list_changed, not three. Default 200 ms.
	Debounce time.Duration
	// ShowUnavailable lists the tools of a skill that is restarting after a
	// crash, marked (description prefix, _meta "io.skillhost/available":
	// false), instead of leaving them out until the skill is back.
	ShowUnavailable bool

	// MaxViews bounds how many distinct filters the HTTP face serves at
	// once; each is one go-sdk server. Idle ones are evicted to make room.
	// Default 64.
	MaxViews int
	// SessionTimeout closes an HTTP session after this long without a
	// request from its client (clients then start a new one, as the
	// specification asks). Default 30 min; negative: never.
	SessionTimeout time.Duration
	// KeepAlive is the interval of the pings the server sends HTTP
	// sessions. A client listening on its event stream answers them, which
	// keeps its session from timing out however long it stays idle. Default
	// 1 min; negative: no pings.
	KeepAlive time.Duration
}

// Server is the MCP face of one registry. Its methods are safe for
// concurrent use; Close stops everything it started.
type Server struct {
	cfg  Config
	reg  *registry.Registry
	log  hclog.Logger
	slog *slog.Logger
	impl *mcpsdk.Implementation
	http *httpFace

	// hard is canceled by Close: calls still running then are cut.
	hard       context.Context
	hardCancel context.CancelFunc

	viewsMu sync.Mutex         // guards views, extra, closed and every view's lastUsed
	views   map[string]*view   // HTTP views by filter key
	extra   map[*view]struct{} // views of ServeTransport sessions
	closed  bool

	mapMu  sync.Mutex // guards mapped
	mapped map[*registry.Tool]*mappedTool

	done      chan struct{} // closed by Close: the watcher stops
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// errClosed answers requests that arrive after Close.
var errClosed = errors.New("mcp: server closed")

const defaultInstructions = "skillhost serves hot-reloadable skills. Tools are named skill.tool. " +
	"The tool list follows reloads, crashes and operator decisions: refetch tools/list on notifications/tools/list_changed. " +
	"A failed call is a result with isError and a reason \"code: message\"; skill_unavailable and overloaded are worth retrying shortly."

// New checks cfg, builds the default view and starts the watcher that keeps
// every view in step with the registry.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil {
		return nil, errors.New("mcp: Config.Registry is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Name == "" {
		cfg.Name = "skillhost"
	}
	if cfg.Version == "" {
		cfg.Version = moduleVersion()
	}
	if cfg.Instructions == "" {
		cfg.Instructions = defaultInstructions
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 200 * time.Millisecond
	}
	if cfg.MaxViews <= 0 {
		cfg.MaxViews = 64
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = time.Minute
	}
	s := &Server{
		cfg: cfg, reg: cfg.Registry, log: cfg.Logger, slog: sdkLogger(cfg.Logger),
		impl:  &mcpsdk.Implementation{Name: cfg.Name, Title: "skillhost", Version: cfg.Version},
		views: map[string]*view{}, extra: map[*view]struct{}{},
		mapped: map[*registry.Tool]*mappedTool{}, done: make(chan struct{}),
	}
	s.hard, s.hardCancel = context.WithCancel(context.Background())
	s.views[Filter{}.String()] = s.newView(Filter{}, true)
	s.http = newHTTPFace(s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watch()
	}()
	return s, nil
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// watch resyncs every view after each burst of registry publications. The
// channel is taken before the sync reads the snapshot, so a publication
// that lands during a sync is never missed.
func (s *Server) watch() {
	for {
		changed := s.reg.Changed()
		s.syncAll()
		select {
		case <-changed:
		case <-s.done:
			return
		}
		t := time.NewTimer(s.cfg.Debounce)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return
		}
	}
}

// Sync brings every view up to date with the registry now, without waiting
// for the debounce (tests, and callers that just changed the registry).
func (s *Server) Sync() { s.syncAll() }

func (s *Server) syncAll() {
	s.viewsMu.Lock()
	views := make([]*view, 0, len(s.views)+len(s.extra))
	for _, v := range s.views {
		views = append(views, v)
	}
	for v := range s.extra {
		views = append(views, v)
	}
	s.viewsMu.Unlock()
	for _, v := range views {
		v.sync()
	}
	s.pruneMappings()
}

// mapping returns the cached MCP form of t.
func (s *Server) mapping(t *registry.Tool) *mappedTool {
	s.mapMu.Lock()
	m, ok := s.mapped[t]
	s.mapMu.Unlock()
	if ok {
		return m
	}
	m = mapTool(t) // outside the lock: it decodes schemas
	s.mapMu.Lock()
	s.mapped[t] = m
	s.mapMu.Unlock()
	return m
}

// pruneMappings forgets the tools the registry no longer serves.
func (s *Server) pruneMappings() {
	snap := s.reg.Snapshot()
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	for t := range s.mapped {
		if cur, ok := snap.Tool(t.Name); !ok || cur != t {
			delete(s.mapped, t)
		}
	}
}

// newView builds the go-sdk server of one filter and fills it.
func (s *Server) newView(f Filter, forHTTP bool) *view {
	v := &view{s: s, filter: f, tools: map[string]string{}, lastUsed: time.Now()}
	opts := &mcpsdk.ServerOptions{
		Instructions: s.cfg.Instructions,
		Logger:       s.slog,
		// Advertise tools with listChanged even while the registry is
		// empty: tools may appear at any moment.
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
	}
	if forHTTP && s.cfg.KeepAlive > 0 {
		// The pings only keep listening clients' sessions alive; a missed
		// pong closes nothing (SessionTimeout reaps abandoned sessions).
		opts.KeepAlive = s.cfg.KeepAlive
		opts.KeepAliveFailureThreshold = math.MaxInt32
	}
	v.srv = mcpsdk.NewServer(s.impl, opts)
	v.srv.AddReceivingMiddleware(v.middleware)
	v.sync()
	return v
}

// ServeTransport serves one MCP session over t (for example
// &mcpsdk.StdioTransport{}) with the tools that pass f, until the client
// disconnects, ctx ends or the server closes.
func (s *Server) ServeTransport(ctx context.Context, t mcpsdk.Transport, f Filter) error {
	f, problems := f.Normalize()
	if err := problems.Err(); err != nil {
		return err
	}
	v := s.newView(f, false)
	s.viewsMu.Lock()
	if s.closed {
		s.viewsMu.Unlock()
		return errClosed
	}
	s.extra[v] = struct{}{}
	s.viewsMu.Unlock()
	defer func() {
		s.viewsMu.Lock()
		delete(s.extra, v)
		s.viewsMu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.hard, cancel)
	defer stop()
	return serveSession(ctx, v.srv, t)
}

// serveSession runs one session of srv over t until the client leaves
// (its error, if any, is returned) or ctx ends (nil). It is the go-sdk's
// Server.Run without its error log for a session closed on purpose.
func serveSession(ctx context.Context, srv *mcpsdk.Server, t mcpsdk.Transport) error {
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
		return err
	case <-ctx.Done():
	}
	ss.Close()
	<-ended
	return nil
}

// Handler is the streamable HTTP face (the daemon mounts it at /mcp). The
// query parameters tags, skills and read_only select a subset of the tools
// (see ParseFilter); each distinct filter has its own tool list.
func (s *Server) Handler() http.Handler { return s.http }

// Drain prepares a graceful stop of the HTTP face: new sessions and event
// streams are refused with 503, and open event streams end (a session's
// once its calls in flight have answered), so that an http.Server's
// Shutdown waits for real work only, not for clients that just listen.
// POSTs on existing sessions go on. Safe to call more than once.
func (s *Server) Drain() { s.http.drain() }

// Close drains, cuts calls still running, closes every session and stops
// the watcher. Safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.http.closeStreams()
		s.hardCancel()
		close(s.done)
		s.viewsMu.Lock()
		s.closed = true
		s.viewsMu.Unlock()
		s.closeSessions()
		s.wg.Wait()
		s.closeSessions() // any session that was being created during the first pass
	})
	return nil
}

func (s *Server) closeSessions() {
	s.viewsMu.Lock()
	var servers []*mcpsdk.Server
	for _, v := range s.views {
		servers = append(servers, v.srv)
	}
	for v := range s.extra {
		servers = append(servers, v.srv)
	}
	s.viewsMu.Unlock()
	for _, srv := range servers {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	}
}

// httpView returns the view of f for the HTTP face, creating it if need be.
func (s *Server) httpView(f Filter) (*view, error) {
	key := f.String()
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if v, ok := s.views[key]; ok {
		v.lastUsed = time.Now()
		return v, nil
	}
	if len(s.views) >= s.cfg.MaxViews {
		s.evictIdleLocked()
		if len(s.views) >= s.cfg.MaxViews {
			return nil, registry.Errorf(registry.CodeOverloaded, "this server already serves %d distinct tool filters; reuse one or try again later", s.cfg.MaxViews)
		}
	}
	v := s.newView(f, true)
	s.views[key] = v
	return v, nil
}

// viewIdle is how long a filter's view must go unused, and sessionless,
// before it may be evicted: long enough that a session being created on it
// has registered.
const viewIdle = time.Minute

func (s *Server) evictIdleLocked() {
	for key, v := range s.views {
		if v.filter.IsZero() || time.Since(v.lastUsed) < viewIdle {
			continue
		}
		busy := false
		for range v.srv.Sessions() {
			busy = true
			break
		}
		if !busy {
			delete(s.views, key)
		}
	}
}

// invoke is the one call path: the registry's Invoke, its answer mapped to
// MCP. Only unknown tools are JSON-RPC errors; every other failure is a
// tool result with isError, so that a model sees the reason.
func (s *Server) invoke(ctx context.Context, v *view, name string, args json.RawMessage) (*mcpsdk.CallToolResult, error) {
	t, known := s.reg.Snapshot().Tool(name)
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		a = []byte("{}")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.hard, cancel)
	defer stop()
	// The filter is checked on the snapshot the call runs on: a swap between
	// tools/list and this call may bring a version the filter refuses.
	res, err := s.reg.InvokePermitted(ctx, name, a, func(t *registry.Tool) error {
		if !v.filter.Match(t) {
			return registry.Errorf(registry.CodeUnknownTool, "tool %s is not offered on this endpoint (its filter: %s)", t.Name, v.filter).With("tool", name)
		}
		return nil
	})
	if err != nil {
		e := registry.AsError(err)
		if e.Code == registry.CodeUnknownTool {
			return nil, wireError(e)
		}
		return errorResult(e), nil
	}
	served := t
	if !known || t.Version != res.Version {
		served, known = s.reg.Snapshot().Tool(res.Tool)
	}
	wrapped := known && served.Version == res.Version && s.mapping(served).wrapped
	return resultFor(res, wrapped), nil
}
