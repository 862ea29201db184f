package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/events"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/metrics"
	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/embed"
)

// ErrStopped is returned by Start on a host that was shut down: a Host
// runs once.
var ErrStopped = errors.New("host: shut down")

// Host is one daemon: its registry, loader, event bus, metrics, HTTP API and
// faces, started and stopped together.
type Host struct {
	cfg   Config
	log   hclog.Logger
	reg   *registry.Registry
	ld    *loader.Loader
	bus   *events.Bus
	met   *metrics.Metrics
	rr    *embed.Reranker // nil without Config.Embed
	api   *api.Server
	faces []Face
	ln    net.Listener // nil without Config.Listen
	srv   *http.Server // nil without Config.Listen
	fleet *fleetFace   // nil without Config.Fleet

	// ready is closed once the first scan has settled; failed receives
	// what stops the host on its own (the HTTP server or the first scan
	// failing). Capacity 2: neither sender ever blocks.
	ready  chan struct{}
	failed chan error

	mu          sync.Mutex // guards started, stopping, addrWritten
	started     bool
	stopping    bool
	addrWritten bool

	// life ends when shutdown starts: the first scan's wait, the call
	// pulse and Rescan calls end with it.
	life    context.Context
	endLife context.CancelFunc
	bg      sync.WaitGroup // the goroutines Start starts

	// force is cancelled when any Shutdown caller's context ends: the
	// stop then stops waiting and kills what is left.
	force     context.Context
	forceStop context.CancelFunc
	stopOnce  sync.Once
	stopped   chan struct{}
}

// New builds the daemon cfg describes and starts nothing but what it must
// own from the start: the listener (so a busy port fails here), the
// loader's run folder and, with OwnsProcess, the watchdog and the
// subreaper. On error everything it made is undone, and every problem of
// cfg it can see is reported at once.
func New(cfg Config) (_ *Host, err error) {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	var errs []error
	if cfg.Skills == "" {
		errs = append(errs, errors.New("Config.Skills is required"))
	}
	if cfg.Tokens.Admin != "" && cfg.Tokens.Admin == cfg.Tokens.Invoke {
		errs = append(errs, errors.New("the admin and invoke tokens are the same; the invoke token would have admin rights"))
	}
	if cfg.Listen == "" && (len(cfg.Faces) > 0 || cfg.MCP != nil || cfg.Agent != nil || cfg.Runs != nil || cfg.Teams != nil || cfg.Console) {
		errs = append(errs, errors.New("faces need the HTTP API: set Config.Listen"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}

	h := &Host{cfg: cfg, log: log, ready: make(chan struct{}), failed: make(chan error, 2), stopped: make(chan struct{})}
	h.force, h.forceStop = context.WithCancel(context.Background())
	h.life, h.endLife = context.WithCancel(context.Background())
	// undo runs the clean-ups of what New made, newest first, when it fails.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			h.forceStop()
			h.endLife()
		}
	}()

	skillUser, err := isolate(log, cfg.SkillUser, cfg.OwnsProcess)
	if err != nil {
		return nil, err
	}
	state := cfg.State
	if state == nil && cfg.StateDir != "" && cfg.Fleet == nil {
		s, warning, err := loader.OpenStateStore(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		if warning != "" {
			log.Warn(warning)
		}
		state = s
	}
	if cfg.Listen != "" {
		if h.ln, err = listen(cfg.Listen, cfg.Tokens.Admin+cfg.Tokens.Invoke != ""); err != nil {
			return nil, err
		}
		undo = append(undo, func() { h.ln.Close() })
	}
	if cfg.Fleet != nil {
		if cfg.State != nil {
			return nil, errors.New("host: Fleet and State both set: the fleet keeps the decisions")
		}
		var addr net.Addr
		if h.ln != nil {
			addr = h.ln.Addr()
		}
		if h.fleet, err = openFleet(*cfg.Fleet, cfg.Skills, cfg.StrictModes, addr, log.Named("fleet")); err != nil {
			return nil, err
		}
		undo = append(undo, func() { h.fleet.Close() })
		state = h.fleet.store
	}

	// Built in the order their hooks need each other: the registry reports
	// calls and changes to the metrics and the bus, the loader reports to
	// both, and the metrics read the registry and the loader once both exist.
	h.bus = events.New(200)
	h.met = metrics.New(metrics.Sources{})
	var rerank registry.Reranker
	if cfg.Embed != nil {
		ec := cfg.Embed.Config
		ec.Logger = log.Named("embed")
		if h.rr, err = embed.New(ec); err != nil {
			return nil, fmt.Errorf("host: embedding rerank: %w", err)
		}
		undo = append(undo, func() { h.rr.Close() })
		rerank = h.rr
		log.Info("embedding rerank enabled", "url", ec.BaseURL, "model", ec.Model, "alpha", ec.Alpha,
			"timeout", ec.Timeout, "api_key", ec.APIKey != "")
	}
	h.reg = registry.New(registry.Config{
		Rerank:   rerank,
		OnCall:   h.met.ObserveCall,
		OnNested: h.observeNested,
		OnChange: h.publishChange,
	})
	reaper := []string(nil)
	if cfg.OwnsProcess {
		reaper = proc.ReaperCommand()
	}
	h.ld, err = loader.New(loader.Config{
		Skills: cfg.Skills, Registry: h.reg, Logger: log, RunDir: cfg.RunDir,
		Grace: cfg.Grace, StartTimeout: cfg.StartTimeout, StrictModes: cfg.StrictModes, SkillUser: skillUser,
		Watch: cfg.Watch, Debounce: cfg.Debounce, Resync: cfg.Resync, MaxParallelStarts: cfg.MaxParallelStarts,
		SkillGOMAXPROCS: cfg.SkillGOMAXPROCS, State: state, DigestCache: cfg.DigestCache,
		Reaper: reaper, Subreaper: cfg.OwnsProcess, Interpreters: cfg.Interpreters,
		OnSwap: h.met.ObserveSwap, OnScan: h.met.ObserveScan, OnEvent: h.publishLifecycle,
	})
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { h.ld.Close(context.Background()) })
	h.met.SetRegistry(h.reg)
	h.met.SetStatus(h.ld.Status)

	h.api = api.New(api.Config{Registry: h.reg, Skills: apiSkills{h.ld}, Logger: log, Events: h.bus, Catalog: h.ld.Catalog()})
	h.api.Handle("GET /metrics", h.met.Handler())
	for _, f := range append(builtinFaces(cfg), h.fleet.faces()...) {
		m := &Mount{Registry: h.reg, Skills: h.ld, Events: h.bus, Metrics: h.met, Logger: log.Named(f.Name()), Ready: h.ready, api: h.api}
		if err := f.Mount(m); err != nil {
			return nil, fmt.Errorf("host: %s: %w", f.Name(), err)
		}
		h.faces = append(h.faces, f)
		if c, ok := f.(io.Closer); ok {
			undo = append(undo, func() { c.Close() })
		}
	}
	if h.ln != nil {
		h.srv = &http.Server{
			Handler: h.handler(), ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout, IdleTimeout: 2 * time.Minute,
			ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		}
	}
	return h, nil
}

// handler is the API with its guards: tokens when set, and, outermost so
// that a web page's request is refused before anything else looks at it,
// the browser check. A unix socket is out of a browser's reach.
func (h *Host) handler() http.Handler {
	var handler http.Handler = h.api
	tokens := h.cfg.Tokens
	if tokens.Admin+tokens.Invoke != "" {
		handler = api.RequireTokens(handler, tokens)
		if tokens.Admin == "" {
			h.log.Warn("only an invoke token is set: rescan, disable, enable and pin are refused over the API")
		}
	}
	if !strings.HasPrefix(h.cfg.Listen, "unix:") {
		handler = api.GuardBrowsers(handler, tokens.Admin+tokens.Invoke == "")
	}
	return handler
}

func (h *Host) publishChange(c registry.Change) {
	h.bus.Publish(events.Event{Type: "registry", Skill: c.Skill, Version: c.Version, State: c.Kind, Reason: c.Reason, Tools: c.Tools})
}

// observeNested counts every nested call; only the failed and refused ones
// are events, as a successful one is as frequent as its parent, and they are
// not kept among the recent events, which a skill failing its calls in a
// loop would otherwise fill.
func (h *Host) observeNested(n registry.NestedCall) {
	h.met.ObserveNested(n)
	if n.Code != "" {
		h.bus.Notify(events.Event{Type: "nested_call", Caller: n.Caller, Tool: n.Tool, Code: string(n.Code),
			CallID: n.ID, ParentCallID: n.ParentID, DurMS: float64(n.Duration) / float64(time.Millisecond)})
	}
}

func (h *Host) publishLifecycle(e loader.Event) {
	h.met.ObserveEvent(e)
	h.bus.Publish(events.Event{Type: e.Type, Skill: e.Skill, Version: e.Version, State: string(e.State), From: string(e.From),
		PID: e.PID, Reason: e.Reason, Restart: e.Restart, DurMS: float64(e.Duration) / float64(time.Millisecond), Time: e.Time})
}

// Registry is the host's tool registry, for a face served outside the
// HTTP API (host mcp's stdio session).
func (h *Host) Registry() *registry.Registry { return h.reg }

// Addr is the address the API listens on, or nil without Config.Listen.
func (h *Host) Addr() net.Addr {
	if h.ln == nil {
		return nil
	}
	return h.ln.Addr()
}

// Ready is closed once the first scan after Start has settled: every skill
// has started or failed, as /readyz reports.
func (h *Host) Ready() <-chan struct{} { return h.ready }

// Start starts serving the API and loading the skills, and returns without
// waiting for them: the API answers meanwhile, /readyz with 503 until
// Ready. A failure after Start returns (the first scan, the HTTP server)
// ends Run. Start runs once; after Shutdown it returns ErrStopped.
func (h *Host) Start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopping:
		return ErrStopped
	case h.started:
		return errors.New("host: already started")
	}
	if h.rr != nil && h.cfg.Embed.Warm {
		if err := h.rr.Watch(h.reg); err != nil {
			return fmt.Errorf("host: embedding warm-up: %w", err)
		}
	}
	for _, f := range h.faces {
		if s, ok := f.(Starter); ok {
			if err := s.Start(); err != nil {
				return fmt.Errorf("host: %s: %w", f.Name(), err)
			}
		}
	}
	h.started = true
	if h.srv != nil {
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			if err := h.srv.Serve(h.ln); !errors.Is(err, http.ErrServerClosed) {
				h.failed <- fmt.Errorf("http server: %w", err)
			}
		}()
		h.log.Info("listening", "addr", h.ln.Addr().String(), "auth", h.cfg.Tokens.Admin+h.cfg.Tokens.Invoke != "")
	}
	// A "calls" event on /v1/events at most every second while calls are
	// made, so the console's counters follow calls from any client.
	h.bg.Add(2)
	go func() {
		defer h.bg.Done()
		h.bus.PulseCalls(h.life, time.Second, h.met.Calls)
	}()
	go func() {
		defer h.bg.Done()
		h.firstScan(h.life)
	}()
	return nil
}

// firstScan runs the loader's start; ctx ends it early at shutdown (the
// loader's Close then stops what it began).
func (h *Host) firstScan(ctx context.Context) {
	began := time.Now()
	if err := h.ld.Start(ctx); err != nil {
		if ctx.Err() == nil {
			h.failed <- err
		}
		return
	}
	h.summary("skills loaded", "skills_dir", h.cfg.Skills, "took", time.Since(began).Round(time.Millisecond))
	if h.cfg.AddrFile != "" && h.ln != nil {
		if err := fileio.WriteAtomic(h.cfg.AddrFile, []byte(h.ln.Addr().String()+"\n"), 0o644); err != nil {
			h.log.Warn("cannot write the address file", "file", h.cfg.AddrFile, "error", err)
		} else {
			h.mu.Lock()
			h.addrWritten = true
			h.mu.Unlock()
		}
	}
	close(h.ready)
}

// Run starts the host and serves until ctx ends or the host fails, then
// shuts it down within Config.Grace. It returns what made it stop early,
// or nil.
func (h *Host) Run(ctx context.Context) error {
	if err := h.Start(); err != nil {
		if errors.Is(err, ErrStopped) {
			return err
		}
		return errors.Join(err, h.Shutdown(context.WithoutCancel(ctx)))
	}
	var err error
	select {
	case <-ctx.Done():
		select {
		case <-h.ready:
		default:
			h.log.Info("stopping before the first scan settled")
		}
	case err = <-h.failed:
	}
	return errors.Join(err, h.Shutdown(context.WithoutCancel(ctx)))
}

// Rescan reads the tree now and waits until every skill has acted on it,
// then logs the outcome, and has every face that is a Reloader re-read its
// own configuration (the runs face its flows); their errors are joined.
// Shutdown ends the wait.
func (h *Host) Rescan(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.life, cancel)()
	if err := h.ld.Rescan(ctx); err != nil {
		return err
	}
	h.summary("rescan done")
	var errs []error
	for _, f := range h.faces {
		if r, ok := f.(Reloader); ok {
			if err := r.Reload(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// Shutdown stops the host: it stops accepting requests, ends event
// streams, lets requests and in-flight calls finish, drains and stops
// every skill, and returns. It waits at most Config.Grace; when ctx ends
// first, it stops waiting and kills what is left (calls still running
// fail). It is safe to call twice and from several goroutines: every call
// returns once the host has stopped, and the first context to end forces
// the stop for all of them (a second signal cutting the grace short).
// Problems on the way are logged; like net/http.Server.Shutdown it returns
// ctx's error when ctx ended before the host had stopped, and nil
// otherwise.
func (h *Host) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, h.forceStop)
	defer stop()
	h.stopOnce.Do(func() {
		defer close(h.stopped)
		h.shutdown()
	})
	<-h.stopped
	return ctx.Err()
}

func (h *Host) shutdown() {
	h.mu.Lock()
	h.stopping = true
	started := h.started
	h.mu.Unlock()
	h.log.Info("shutting down: draining calls and skills", "grace", h.cfg.Grace)
	h.endLife() // the first scan returns at once; the loader's Close stops the rest
	// Long-lived requests end first, so that the HTTP server's wait is for
	// real work only.
	h.api.Shutdown()
	for _, f := range h.faces {
		if d, ok := f.(Drainer); ok {
			d.Drain()
		}
	}
	// One deadline for everything: HTTP requests and skill drains end by
	// the same time, so a stop never takes longer than Grace (plus the
	// kill), which is what a service manager's stop timeout is sized for.
	deadline, cancel := context.WithTimeout(h.force, h.cfg.Grace)
	defer cancel()
	forced := false
	if h.srv != nil {
		if !started {
			h.ln.Close() // Serve never took it
		}
		err := h.srv.Shutdown(deadline)
		switch {
		case errors.Is(err, context.Canceled):
			// Forced: the requests still open are mostly calls waiting on
			// skills. They get their answer (skill_unavailable) when the
			// loader stops the skills below, so the connections stay
			// until then.
			forced = true
		case err != nil:
			h.log.Warn("http shutdown", "error", err)
			h.srv.Close()
		}
	}
	for _, f := range h.faces {
		if c, ok := f.(io.Closer); ok {
			if err := c.Close(); err != nil {
				h.log.Warn("closing a face", "face", f.Name(), "error", err)
			}
		}
	}
	if h.rr != nil {
		h.rr.Close()
	}
	h.ld.Close(deadline)
	if forced {
		// A moment for those answers to be written, then the rest goes.
		wait, cancel := context.WithTimeout(context.Background(), time.Second)
		h.srv.Shutdown(wait)
		cancel()
		h.srv.Close()
	}
	h.bg.Wait()
	h.mu.Lock()
	written := h.addrWritten
	h.mu.Unlock()
	if written {
		os.Remove(h.cfg.AddrFile) // a later reader must not take a stopped daemon's address
	}
	h.forceStop()
	h.log.Info("stopped")
}

// summary logs how many versions are in each state, so that a scan's
// outcome is visible in the log without a call to the API.
func (h *Host) summary(msg string, extra ...any) {
	st := h.ld.Status()
	counts := map[loader.State]int{}
	for _, s := range st {
		for _, v := range s.Versions {
			counts[v.State]++
		}
	}
	args := append([]any{"skills", len(st), "tools", h.reg.Snapshot().Len()}, extra...)
	for _, state := range []loader.State{loader.StateActive, loader.StateFailed, loader.StateInvalid, loader.StateIncomplete, loader.StateCrashed} {
		if counts[state] > 0 {
			args = append(args, string(state), counts[state])
		}
	}
	h.log.Info(msg, args...)
}

// isolate does what keeps the host's secrets from its skills before any
// skill starts: with owns, it makes the process non-dumpable (a skill
// running as the host's user cannot read its /proc/<pid>/environ or
// memory); and it resolves the account skills run as. A host running as
// root with skills as root gets a warning: the loader withholds the
// capabilities that would read the host's memory (ptrace and the like),
// but a root skill can still write root's files.
func isolate(log hclog.Logger, skillUser string, owns bool) (*proc.SkillUser, error) {
	if owns {
		if err := proc.Harden(); err != nil {
			log.Warn("cannot make the host non-dumpable; skills running as its user can read its environment", "error", err)
		}
	}
	if skillUser == "" {
		if os.Geteuid() == 0 {
			log.Warn("the host runs as root and so do its skills: they start without the capabilities that read another process's memory, so the host's environment stays out of their reach, but they can write anything root can; pass --skill-user nobody (or run the host as its own user)")
		}
		return nil, nil
	}
	u, err := proc.LookupSkillUser(skillUser)
	if err != nil {
		return nil, err
	}
	log.Info("skills run as another account", "skill_user", u.String())
	return u, nil
}
