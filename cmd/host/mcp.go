package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/host"
	"github.com/skillhost/skillhost/pkg/mcp"
)

// mcpServeFlags adds the flags of host serve's MCP face (streamable HTTP at
// /mcp, behind the same token check as the rest of the API) to fs, and
// returns what turns them into its config: nil when --mcp=false.
func mcpServeFlags(fs *flag.FlagSet) func() *host.MCPConfig {
	var enabled, showUnavailable bool
	var discovery mcp.Discovery
	fs.BoolVar(&enabled, "mcp", true, "serve the MCP face (streamable HTTP) at /mcp")
	fs.BoolVar(&showUnavailable, "mcp-show-unavailable", false, "list the tools of a skill restarting after a crash, marked unavailable, instead of leaving them out until it is back")
	discoveryFlag(fs, "mcp-discovery", &discovery, "/mcp's mode when its URL does not choose one (?discovery=): \"search\" starts sessions with find_tools, load_tools and call_tool instead of every tool (default off)")
	return func() *host.MCPConfig {
		if !enabled {
			return nil
		}
		return &host.MCPConfig{ShowUnavailable: showUnavailable, Discovery: discovery}
	}
}

// discoveryFlag adds a flag that takes a discovery mode, checked as it is
// parsed.
func discoveryFlag(fs *flag.FlagSet, name string, d *mcp.Discovery, usage string) {
	fs.Func(name, usage, func(s string) error {
		v, err := mcp.ParseDiscovery(s)
		*d = v
		return err
	})
}

// `host mcp`: one MCP session on stdin/stdout, for a client that launches
// its servers (desktop assistants, IDEs).
//
// Without --addr it embeds a host: its own registry and loader over
// --skills, watched and hot-reloaded like the daemon's. That is the default
// because it is what a launched stdio server is expected to be:
// self-contained, alive exactly as long as the client, nothing else to
// install, run, secure or keep reachable, and no second process between the
// client and its tools whose failure the client cannot see. With --addr it
// bridges to a running daemon's /mcp instead, for when one set of skill
// processes, one place for operator decisions (disable, pin) and one set of
// metrics should serve every client. See docs/mcp.md.

type mcpFlags struct {
	skills, stateDir, runDir string
	addr, tokenFile          string
	tags, only               string
	readOnly                 bool
	showUnavailable          bool
	discovery                mcp.Discovery
	grace, startTimeout      time.Duration
	debounce                 time.Duration
	strictModes              bool
	skillUser                string
	skillProcs               int
	interpreters             host.Interpreters
	logFormat, logLevel      string
}

// mcp is `host mcp`: flags, then either an embedded host (host.Config, as
// serve builds its own) serving one stdio session, or a bridge.
func (p process) mcp(args []string, stdout, stderr io.Writer) int {
	var f mcpFlags
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: host mcp [flags]

Serves MCP on stdin/stdout for a client that launches its servers. Logs go
to stderr: stdout carries only the protocol.

  host mcp --skills DIR      embed a host over DIR (default)
  host mcp --addr ADDR       bridge to a running daemon (host serve)

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.skills, "skills", envOr("SKILLHOST_SKILLS", "./skills"), "embedded: the skills tree to serve and watch (env SKILLHOST_SKILLS); use an absolute path, a client's working folder is anyone's guess")
	fs.StringVar(&f.stateDir, "state-dir", os.Getenv("SKILLHOST_STATE_DIR"), "embedded: read operator decisions (disable, pin) from this folder, e.g. the daemon's --state-dir (default: none)")
	fs.StringVar(&f.runDir, "run-dir", "", "embedded: folder in which the host makes its own folder for the private copies of running skills (default: the temp folder)")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "embedded: how long a replaced version may finish its calls")
	fs.DurationVar(&f.startTimeout, "start-timeout", 10*time.Second, "embedded: how long a skill may take to start and describe itself")
	fs.DurationVar(&f.debounce, "debounce", 300*time.Millisecond, "embedded: quiet period that merges bursts of file changes")
	fs.BoolVar(&f.strictModes, "strict-modes", true, "embedded: refuse group- or world-writable and foreign-owned skill files")
	skillUserFlag(fs, &f.skillUser, "embedded: ")
	skillProcsFlag(fs, &f.skillProcs, "embedded: ")
	runtimeFlag(fs, &f.interpreters, "embedded: ")
	fs.BoolVar(&f.showUnavailable, "show-unavailable", false, "embedded: list a restarting skill's tools, marked, instead of leaving them out")
	fs.StringVar(&f.addr, "addr", "", "bridge to the daemon at this address (http://host:port, host:port or unix:/path.sock) instead of embedding a host")
	fs.StringVar(&f.tokenFile, "token-file", os.Getenv("SKILLHOST_TOKEN_FILE"), "bridge: file with the daemon's bearer token (env SKILLHOST_TOKEN_FILE, or SKILLHOST_TOKEN for the token itself)")
	fs.StringVar(&f.tags, "tags", "", "offer only tools carrying any of these tags (comma separated)")
	fs.StringVar(&f.only, "only-skills", "", "offer only the tools of these skills (comma separated)")
	fs.BoolVar(&f.readOnly, "read-only", false, "offer only tools annotated read-only")
	discoveryFlag(fs, "discovery", &f.discovery, "\"search\": start with find_tools, load_tools and call_tool instead of every tool, for clients with many tools (default off)")
	logFlags(fs, &f.logFormat, &f.logLevel)
	log, code, ok := parseLogged("mcp", fs, args, stderr, &f.logFormat, &f.logLevel)
	if !ok {
		return code
	}
	q := url.Values{"tags": {f.tags}, "skills": {f.only}}
	if f.readOnly {
		q.Set("read_only", "true")
	}
	filter, err := mcp.ParseFilter(q)
	if err != nil {
		fmt.Fprintf(stderr, "host mcp: %v\n", err)
		return exitUsage
	}
	endpoint := mcp.Endpoint{Filter: filter, Discovery: f.discovery}
	// A hangup is the session's terminal or client going away: stop as
	// cleanly as on SIGTERM (drain, stop the skills), not die of it.
	ctx, stop := signal.NotifyContext(p.ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// stdout belongs to the protocol; the SDK must not close the writer
	// it was handed (a test's buffer, or the process's stdout).
	transport := &mcpsdk.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{stdout}}
	if f.addr != "" {
		return runMCPBridge(ctx, f, endpoint, log, transport)
	}
	return runMCPEmbedded(ctx, f, endpoint, log, transport, p.owns)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func runMCPEmbedded(ctx context.Context, f mcpFlags, endpoint mcp.Endpoint, log hclog.Logger, t mcpsdk.Transport, owns bool) int {
	h, err := host.New(host.Config{
		Skills: f.skills, Logger: log, StateDir: f.stateDir, RunDir: f.runDir,
		Grace: f.grace, StartTimeout: f.startTimeout, Debounce: f.debounce, StrictModes: f.strictModes, Watch: true,
		SkillUser: f.skillUser, SkillGOMAXPROCS: f.skillProcs, Interpreters: f.interpreters, OwnsProcess: owns,
	})
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitFailure
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	ran := make(chan error, 1)
	go func() { ran <- h.Run(runCtx) }()
	// Loaded before serving, so that the client's first tools/list is the
	// whole catalog; a client's initialize waits in the pipe meanwhile.
	select {
	case <-h.Ready():
	case err := <-ran:
		if err != nil {
			log.Error("cannot load the skills", "error", err)
			return exitFailure
		}
		log.Info("signal; stopped before the skills were loaded")
		return exitOK
	}
	code := serveMCPStdio(ctx, h, f, endpoint, log, t)
	stopRun()
	<-ran
	return code
}

// serveMCPStdio serves one MCP session on t over the embedded host's
// registry until the client goes or ctx ends.
func serveMCPStdio(ctx context.Context, h *host.Host, f mcpFlags, endpoint mcp.Endpoint, log hclog.Logger, t mcpsdk.Transport) int {
	srv, err := mcp.New(mcp.Config{Registry: h.Registry(), Skills: h.MCPSkills(), Logger: log.Named("mcp"), ShowUnavailable: f.showUnavailable})
	if err != nil {
		log.Error("cannot start the MCP server", "error", err)
		return exitFailure
	}
	defer srv.Close()
	log.Info("serving MCP on stdio", "skills", f.skills, "tools", h.Registry().Snapshot().Len(), "filter", endpoint.Filter, "discovery", endpoint.Discovery)
	if err := srv.ServeEndpoint(ctx, t, endpoint); err != nil && ctx.Err() == nil {
		log.Debug("session ended", "error", err)
	}
	if ctx.Err() != nil {
		log.Info("signal; stopping")
	} else {
		log.Info("client gone; stopping")
	}
	return exitOK
}

func runMCPBridge(ctx context.Context, f mcpFlags, e mcp.Endpoint, log hclog.Logger, t mcpsdk.Transport) int {
	token := os.Getenv("SKILLHOST_TOKEN")
	if f.tokenFile != "" {
		tok, err := api.ReadToken(f.tokenFile)
		if err != nil {
			log.Error("cannot read the token", "error", err)
			return exitUsage
		}
		token = tok
	}
	endpoint, hc, err := mcpEndpoint(f.addr, e)
	if err != nil {
		log.Error("bad --addr", "error", err)
		return exitUsage
	}
	log.Info("bridging MCP on stdio to the daemon", "endpoint", endpoint)
	err = mcp.ServeBridge(ctx, mcp.BridgeConfig{Endpoint: endpoint, Token: token, HTTPClient: hc, Logger: log.Named("mcp")}, t)
	switch {
	case errors.Is(err, mcp.ErrUnreachable):
		log.Error("cannot connect to the daemon: is `host serve` running there, and does it need a token (--token-file)?", "error", err)
		return exitUnreachable
	case err != nil && ctx.Err() == nil:
		log.Debug("session ended", "error", err)
	}
	return exitOK
}

// mcpEndpoint turns --addr into the URL of the daemon's MCP endpoint (path
// /mcp unless one is given) carrying the filter, and the HTTP client to
// reach it (over a unix socket for unix:/path).
func mcpEndpoint(addr string, e mcp.Endpoint) (string, *http.Client, error) {
	base, hc := daemonHTTP(strings.TrimSpace(addr))
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", nil, fmt.Errorf("%q is not an address (want http://host:port, host:port or unix:/path.sock)", addr)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	q := u.Query()
	for k, v := range e.Query() {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return u.String(), hc, nil
}
