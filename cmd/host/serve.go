package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/host"
	"github.com/skillhost/skillhost/pkg/loader"
)

type serveFlags struct {
	addrFile, stateDir, flows         string
	teamWorkers                       int
	invokeTokenFile                   string
	skills, listen, tokenFile, runDir string
	logFormat, logLevel               string
	skillUser                         string
	grace, startTimeout               time.Duration
	debounce, resync                  time.Duration
	readHeaderTimeout, readTimeout    time.Duration
	strictModes, watch                bool
	maxStarts, skillProcs             int
	interpreters                      host.Interpreters
}

// serve is `host serve`: flags, then a host.Config, then host.Run until a
// signal.
func (p process) serve(args []string, stdout, stderr io.Writer) int {
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
	runtimeFlag(fs, &f.interpreters, "")
	fs.BoolVar(&f.watch, "watch", true, "follow the skills tree and hot-reload changes")
	fs.IntVar(&f.maxStarts, "max-parallel-starts", 8, "how many skills may start at once")
	fs.StringVar(&f.stateDir, "state-dir", envOr("SKILLHOST_STATE_DIR", "./.state"), "folder for persistent operator decisions (disable, pin)")
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&f.readTimeout, "read-timeout", time.Minute, "how long a client may take to send a whole request")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the bound listen address to this file once the first scan has settled, as /readyz reports, and remove it on exit (for scripts and tests)")
	fs.StringVar(&f.flows, "flows", os.Getenv("SKILLHOST_FLOWS"), "folder of flow files for multi-agent runs (default: flows/ beside --agents; env SKILLHOST_FLOWS)")
	fs.IntVar(&f.teamWorkers, "team-workers", 4, "how many team members may run a turn at once (an idle member costs nothing)")
	mcpConfig := mcpServeFlags(fs)
	agentConfig := agentFlags(fs)
	embedConfig := embedFlags(fs)
	fleetConfig := fleetFlags(fs)
	log, code, ok := parseLogged("serve", fs, args, stderr, &f.logFormat, &f.logLevel)
	if !ok {
		return code
	}
	cfg := host.Config{
		Skills: f.skills, Logger: log, Listen: f.listen, AddrFile: f.addrFile,
		ReadHeaderTimeout: f.readHeaderTimeout, ReadTimeout: f.readTimeout,
		StateDir: f.stateDir, DigestCache: filepath.Join(f.stateDir, loader.DigestCacheFileName),
		RunDir: f.runDir, Grace: f.grace, StartTimeout: f.startTimeout, Debounce: f.debounce, Resync: f.resync,
		MaxParallelStarts: f.maxStarts, SkillGOMAXPROCS: f.skillProcs, StrictModes: f.strictModes, Watch: f.watch,
		SkillUser: f.skillUser, Interpreters: f.interpreters, OwnsProcess: p.owns, MCP: mcpConfig(), Console: true,
	}
	err := readTokens(&cfg.Tokens, f.tokenFile, f.invokeTokenFile)
	if err == nil {
		cfg.Agent, err = agentConfig()
	}
	if err == nil {
		cfg.Embed, err = embedConfig()
	}
	if f.flows == "" {
		if agents := fs.Lookup("agents").Value.String(); agents != "" {
			f.flows = host.FlowsBeside(agents)
		}
	}
	cfg.Runs = &host.RunsConfig{Flows: f.flows}
	cfg.Teams = &host.TeamsConfig{Workers: f.teamWorkers}
	if err == nil {
		cfg.Fleet, err = fleetConfig()
	}
	if err == nil {
		err = runDaemon(p.ctx, cfg, log)
	}
	if err != nil {
		log.Error("host stopped", "error", err)
		return exitFailure
	}
	return exitOK
}

// readTokens reads the admin and invoke token files that are set.
func readTokens(dst *api.Tokens, adminFile, invokeFile string) error {
	for _, tf := range []struct {
		path string
		dst  *string
	}{{adminFile, &dst.Admin}, {invokeFile, &dst.Invoke}} {
		if tf.path == "" {
			continue
		}
		t, err := api.ReadToken(tf.path)
		if err != nil {
			return err
		}
		*tf.dst = t
	}
	if dst.Admin != "" && dst.Admin == dst.Invoke {
		return errors.New("--token-file and --invoke-token-file hold the same token; the invoke token would have admin rights")
	}
	return nil
}

// runDaemon runs the host until ctx ends or a signal stops it. SIGHUP
// rescans; SIGINT or SIGTERM stops gracefully (host.Shutdown, within
// --grace); a second one cuts the grace short.
func runDaemon(ctx context.Context, cfg host.Config, log hclog.Logger) error {
	h, err := host.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	var wg sync.WaitGroup // the signal loop and the rescans it started
	wg.Add(1)
	go func() {
		defer wg.Done()
		stopping := false
		for {
			var sig os.Signal
			select {
			case <-done:
				return
			case sig = <-sigs:
			}
			switch {
			case sig == syscall.SIGHUP:
				log.Info("SIGHUP: rescanning")
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := h.Rescan(ctx); err != nil && ctx.Err() == nil {
						log.Warn("rescan failed", "error", err)
					}
				}()
			case !stopping:
				stopping = true
				log.Info("signal; stopping", "signal", sig.String())
				cancel()
			default:
				log.Warn("second signal: stopping now")
				now, expire := context.WithCancel(context.Background())
				expire()
				h.Shutdown(now)
			}
		}
	}()
	err = h.Run(ctx)
	close(done)
	wg.Wait()
	return err
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
