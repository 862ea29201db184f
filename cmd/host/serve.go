package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/events"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/metrics"
	"github.com/skillhost/skillhost/pkg/registry"
)

// A mount adds routes or background work to the daemon. Optional faces
// (MCP, the agent loop) register one from their own file with init, so the
// wiring of each stays beside its flags.
type mount struct {
	name  string
	flags func(fs *flag.FlagSet)
	setup func(d *daemon) error
}

var mounts []mount

// daemon is what a mount may wire into.
type daemon struct {
	Server   *api.Server
	Registry *registry.Registry
	Loader   *loader.Loader
	Log      hclog.Logger
	Events   *events.Bus
	Metrics  *metrics.Metrics
	// OnShutdown runs when shutdown starts, before the HTTP server waits
	// for requests to end: a face with long-lived streams ends them here.
	OnShutdown []func()
	// OnClose runs at shutdown, after the HTTP server stopped and before
	// the skills are drained.
	OnClose []func()
}

type serveFlags struct {
	addrFile, stateDir                string
	invokeTokenFile                   string
	skills, listen, tokenFile, runDir string
	logFormat, logLevel               string
	skillUser                         string
	grace, startTimeout               time.Duration
	debounce, resync                  time.Duration
	readHeaderTimeout, readTimeout    time.Duration
	strictModes, watch                bool
	maxStarts, skillProcs             int
}

func runServe(args []string, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.skills, "skills", envOr("SKILLHOST_SKILLS", "./skills"), "the skills tree to serve and watch (env SKILLHOST_SKILLS)")
	fs.StringVar(&f.listen, "listen", envOr("SKILLHOST_LISTEN", "127.0.0.1:7070"), "listen address host:port, or unix:/path/to.sock (env SKILLHOST_LISTEN)")
	fs.StringVar(&f.tokenFile, "token-file", os.Getenv("SKILLHOST_TOKEN_FILE"), "file holding the bearer token the API requires (the admin token); a token is required for a non-loopback listen address")
	fs.StringVar(&f.invokeTokenFile, "invoke-token-file", os.Getenv("SKILLHOST_INVOKE_TOKEN_FILE"), "file holding a second token that may read and call tools but not rescan, disable, enable or pin")
	fs.StringVar(&f.runDir, "run-dir", "", "folder in which the host makes its own folder for the private copies of running skills (default: the temp folder)")
	logFlags(fs, &f.logFormat, &f.logLevel)
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "how long a replaced or stopping version may finish its calls")
	fs.DurationVar(&f.startTimeout, "start-timeout", 10*time.Second, "how long a skill may take to start and describe itself")
	fs.DurationVar(&f.debounce, "debounce", 300*time.Millisecond, "quiet period that merges bursts of file changes")
	fs.DurationVar(&f.resync, "resync", 30*time.Second, "period of the full rescan that backs up file watching")
	fs.BoolVar(&f.strictModes, "strict-modes", true, "refuse group- or world-writable and foreign-owned skill files (like sshd's StrictModes)")
	skillUserFlag(fs, &f.skillUser, "")
	skillProcsFlag(fs, &f.skillProcs, "")
	fs.BoolVar(&f.watch, "watch", true, "follow the skills tree and hot-reload changes")
	fs.IntVar(&f.maxStarts, "max-parallel-starts", 8, "how many skills may start at once")
	fs.StringVar(&f.stateDir, "state-dir", envOr("SKILLHOST_STATE_DIR", "./.state"), "folder for persistent operator decisions (disable, pin)")
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&f.readTimeout, "read-timeout", time.Minute, "how long a client may take to send a whole request")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the bound listen address to this file once the first scan has settled, as /readyz reports, and remove it on exit (for scripts and tests)")
	for _, m := range mounts {
		if m.flags != nil {
			m.flags(fs)
		}
	}
	log, code, ok := parseLogged("serve", fs, args, stderr, &f.logFormat, &f.logLevel)
	if !ok {
		return code
	}
	if err := serve(f, log); err != nil {
		log.Error("host stopped", "error", err)
		return exitFailure
	}
	return exitOK
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// listen opens the API listener and refuses, unless a token guards the API,
// any address that is not loopback.
func listen(addr string, haveToken bool) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, fmt.Errorf("--listen %s: %s exists and is not a socket; refusing to replace it", addr, path)
			}
			// Only a socket nobody answers on is an earlier run's leftover;
			// removing a live one would cut its daemon off from its clients.
			c, err := net.DialTimeout("unix", path, time.Second)
			if err == nil {
				c.Close()
				return nil, fmt.Errorf("--listen %s: another process serves on %s; stop it or choose another path", addr, path)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("--listen %s: cannot tell whether %s is in use: %w", addr, path, err)
			}
			os.Remove(path)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		// Connecting takes write permission: the owner's alone.
		if err := os.Chmod(path, 0o600); err != nil {
			l.Close()
			return nil, fmt.Errorf("--listen %s: %w", addr, err)
		}
		return l, nil
	}
	if !api.IsLoopback(addr) && !haveToken {
		return nil, fmt.Errorf("refusing to listen on %s without a token: the address is not loopback; pass --token-file (or --invoke-token-file) or listen on 127.0.0.1", addr)
	}
	return net.Listen("tcp", addr)
}

func serve(f serveFlags, log hclog.Logger) error {
	skillUser, err := isolateSkills(log, f.skillUser)
	if err != nil {
		return err
	}
	var tokens api.Tokens
	for _, tf := range []struct {
		path string
		dst  *string
	}{{f.tokenFile, &tokens.Admin}, {f.invokeTokenFile, &tokens.Invoke}} {
		if tf.path == "" {
			continue
		}
		t, err := api.ReadToken(tf.path)
		if err != nil {
			return err
		}
		*tf.dst = t
	}
	if tokens.Admin != "" && tokens.Admin == tokens.Invoke {
		return errors.New("--token-file and --invoke-token-file hold the same token; the invoke token would have admin rights")
	}
	token := tokens.Admin + tokens.Invoke // non-empty when any token guards the API
	ln, err := listen(f.listen, token != "")
	if err != nil {
		return err
	}
	state, warning, err := loader.OpenStateStore(f.stateDir)
	if err != nil {
		ln.Close()
		return err
	}
	if warning != "" {
		log.Warn(warning)
	}
	bus := events.New(200)
	var ld *loader.Loader
	m := metrics.New(metrics.Sources{Status: func() []loader.SkillStatus { return ld.Status() }})
	rr, err := embedReranker(log)
	if err != nil {
		ln.Close()
		return err
	}
	reg := registry.New(registry.Config{
		Rerank: rr,
		OnCall: m.ObserveCall,
		// Every nested call is counted; only the failed and refused ones
		// are events, as a successful one is as frequent as its parent,
		// and they are not kept among the recent events, which a skill
		// failing its calls in a loop would otherwise fill.
		OnNested: func(n registry.NestedCall) {
			m.ObserveNested(n)
			if n.Code != "" {
				bus.Notify(events.Event{Type: "nested_call", Caller: n.Caller, Tool: n.Tool, Code: string(n.Code),
					CallID: n.ID, ParentCallID: n.ParentID, DurMS: float64(n.Duration) / float64(time.Millisecond)})
			}
		},
		OnChange: func(c registry.Change) {
			bus.Publish(events.Event{Type: "registry", Skill: c.Skill, Version: c.Version, State: c.Kind, Reason: c.Reason, Tools: c.Tools})
		},
	})
	m.SetRegistry(reg)
	ld, err = loader.New(loader.Config{
		Skills: f.skills, Registry: reg, Logger: log, RunDir: f.runDir,
		Grace: f.grace, StartTimeout: f.startTimeout, StrictModes: f.strictModes, SkillUser: skillUser,
		Watch: f.watch, Debounce: f.debounce, Resync: f.resync, MaxParallelStarts: f.maxStarts, SkillGOMAXPROCS: f.skillProcs,
		State: state, DigestCache: filepath.Join(f.stateDir, loader.DigestCacheFileName),
		OnSwap: m.ObserveSwap, OnScan: m.ObserveScan, Reaper: reaperCommand(), Subreaper: true,
		OnEvent: func(e loader.Event) {
			m.ObserveEvent(e)
			bus.Publish(events.Event{Type: e.Type, Skill: e.Skill, Version: e.Version, State: string(e.State), From: string(e.From),
				PID: e.PID, Reason: e.Reason, DurMS: float64(e.Duration) / float64(time.Millisecond), Time: e.Time})
		},
	})
	if err != nil {
		ln.Close()
		return err
	}
	apiServer := api.New(api.Config{Registry: reg, Skills: ld, Logger: log, Events: bus})
	apiServer.Handle("GET /metrics", m.Handler())
	d := &daemon{Server: apiServer, Registry: reg, Loader: ld, Log: log, Events: bus, Metrics: m}
	d.OnShutdown = append(d.OnShutdown, apiServer.Shutdown)
	// A "calls" event on /v1/events at most every second while calls are
	// made, so the console's counters follow calls from any client.
	pulseCtx, stopPulse := context.WithCancel(context.Background())
	pulseDone := make(chan struct{})
	go func() {
		defer close(pulseDone)
		bus.PulseCalls(pulseCtx, time.Second, m.Calls)
	}()
	defer func() { stopPulse(); <-pulseDone }()
	for _, m := range mounts {
		if err := m.setup(d); err != nil {
			ln.Close()
			ld.Close(context.Background())
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	var handler http.Handler = apiServer
	if token != "" {
		handler = api.RequireTokens(handler, tokens)
		if tokens.Admin == "" {
			log.Warn("only an invoke token is set: rescan, disable, enable and pin are refused over the API")
		}
	}
	// Outermost, so that a web page's request is refused before anything
	// else looks at it. A unix socket is out of a browser's reach.
	if !strings.HasPrefix(f.listen, "unix:") {
		handler = api.GuardBrowsers(handler, token == "")
	}
	srv := &http.Server{
		Handler: handler, ReadHeaderTimeout: f.readHeaderTimeout, ReadTimeout: f.readTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "auth", token != "")
	// The API answers (with /readyz 503) while the first scan settles, and
	// signals are heard meanwhile: a skill that hangs at start must not
	// hold off a stop for its start timeout.
	start := time.Now()
	startCtx, cancelStart := context.WithCancel(context.Background())
	defer cancelStart()
	started := make(chan error, 1)
	go func() { started <- ld.Start(startCtx) }()
	for {
		select {
		case err := <-started:
			started = nil
			if err != nil {
				srv.Close()
				ld.Close(context.Background())
				return err
			}
			logSummary(log, "skills loaded", ld.Status(), reg.Snapshot().Len(), "skills_dir", f.skills, "took", time.Since(start).Round(time.Millisecond))
			if f.addrFile != "" {
				if err := writeFileAtomic(f.addrFile, []byte(ln.Addr().String()+"\n")); err != nil {
					log.Warn("cannot write --addr-file", "error", err)
				} else {
					defer os.Remove(f.addrFile) // a later reader must not take a stopped daemon's address
				}
			}
		case err := <-served:
			cancelStart()
			if started != nil {
				<-started
			}
			ld.Close(context.Background())
			return fmt.Errorf("http server: %w", err)
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				log.Info("SIGHUP: rescanning")
				go func() {
					if err := ld.Rescan(context.Background()); err != nil {
						log.Warn("rescan failed", "error", err)
						return
					}
					logSummary(log, "rescan done", ld.Status(), reg.Snapshot().Len())
				}()
				continue
			}
			if started != nil {
				// Start waits for the first launches; it returns at once
				// when told to, and the loader's Close stops the rest.
				log.Info("stopping before the first scan settled", "signal", sig.String())
				cancelStart()
				<-started
			}
			return shutdown(log, srv, d, sigs, f.grace)
		}
	}
}

// shutdown stops accepting requests, lets in-flight calls finish within the
// grace period, drains and stops every skill, and returns. A second signal
// cuts the grace short.
func shutdown(log hclog.Logger, srv *http.Server, d *daemon, sigs <-chan os.Signal, grace time.Duration) error {
	log.Info("shutting down: draining calls and skills", "grace", grace)
	hard, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for sig := range sigs {
			if sig != syscall.SIGHUP {
				log.Warn("second signal: stopping now")
				cancel()
				return
			}
		}
	}()
	for _, f := range d.OnShutdown {
		f()
	}
	// One grace period for everything: HTTP requests and skill drains end by
	// the same deadline, so a stop never takes longer than --grace (plus the
	// kill), which is what a service manager's stop timeout is sized for.
	deadline, cancelDeadline := context.WithTimeout(hard, grace)
	defer cancelDeadline()
	if err := srv.Shutdown(deadline); err != nil && !errors.Is(err, context.Canceled) {
		log.Warn("http shutdown", "error", err)
		srv.Close()
	}
	for _, f := range d.OnClose {
		f()
	}
	d.Loader.Close(deadline)
	log.Info("stopped")
	return nil
}

// writeFileAtomic writes data to path through a temp file and a rename, so a
// reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// logSummary logs how many versions are in each state, so a rescan's
// outcome is visible in the log without a call to the API.
func logSummary(log hclog.Logger, msg string, st []loader.SkillStatus, tools int, extra ...any) {
	counts := map[loader.State]int{}
	for _, s := range st {
		for _, v := range s.Versions {
			counts[v.State]++
		}
	}
	args := append([]any{"skills", len(st), "tools", tools}, extra...)
	for _, state := range []loader.State{loader.StateActive, loader.StateFailed, loader.StateInvalid, loader.StateIncomplete, loader.StateCrashed} {
		if counts[state] > 0 {
			args = append(args, string(state), counts[state])
		}
	}
	log.Info(msg, args...)
}
