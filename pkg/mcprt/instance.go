package mcprt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Defaults of Config.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopTimeout  = 2 * time.Second
	// DefaultMaxMessageBytes is the default manifest's max_response_bytes
	// (4 MiB) plus room for JSON-RPC framing.
	DefaultMaxMessageBytes = 4<<20 + msgOverhead
	msgOverhead            = 64 << 10
	maxPages               = 100 // tools/list pages before a server is judged to loop
)

// Config is what Launch needs to run one version of one skill. The loader
// fills it from the manifest and its own flags.
type Config struct {
	Skill, Version string
	// Dir is the version folder as installed. It is copied, and only the
	// verified copy runs.
	Dir  string
	Spec Spec
	// Env is the manifest's env: with PATH and HOME (both inside the
	// private run folder) the only environment the server gets. "${HOME}"
	// in a value is replaced by that HOME, so that a server can be told
	// where to keep its files ("MEMORY_FILE_PATH": "${HOME}/memory.jsonl").
	Env map[string]string
	// Interpreters is the operator's allow map.
	Interpreters Interpreters
	// RunDir is where private run folders are made. Default: os.TempDir().
	RunDir string
	Logger hclog.Logger
	// StartTimeout bounds copying nothing, but initialize and the first
	// tools/list. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long Close waits for the server to exit after
	// its stdin is closed before killing it. Default DefaultStopTimeout.
	StopTimeout time.Duration
	// MaxMessageBytes caps one line the server writes. A longer response
	// fails its call with response_too_large and is never held in memory.
	// Default DefaultMaxMessageBytes; set it to the manifest's
	// max_response_bytes plus framing room.
	MaxMessageBytes int
	// OnExit is called once when the process exits without being asked
	// (a crash), after Exited is closed. It runs on the runtime's own
	// goroutine and must not block; the supervisor restarts with backoff.
	OnExit func(*Instance)
	// OnToolsChanged is called when the server sends
	// notifications/tools/list_changed. It runs on the connection's reader
	// and must not block: signal a goroutine that calls Describe. It may
	// be called before Launch returns (servers that add tools once
	// initialized say so at once), and is then best answered the same way.
	OnToolsChanged func(*Instance)
	// Copies, if set, shares verified copies between instances of the
	// same folder digest (a restart reuses its predecessor's). Default: a
	// copy of its own per instance, removed with it.
	Copies *Copies
	// User, if set, is the account the server runs as (the host's
	// --skill-user), with no supplementary groups. The copy then belongs to
	// its group (folders 0750, files 0440 or 0550), its home to it (0700),
	// and the run folder is 0711, so that it can reach both and nothing
	// else of the host's. Giving a process another user needs root.
	User *User
	// ConfigureCmd, if set, may adjust the command before it starts: a
	// SysProcAttr with the skill user's Credential, for instance. The
	// process group and parent-death signal are set after it, and it must
	// not touch Stdin, Stdout or Env. It is called again for each retry of
	// an exec that failed with ETXTBSY.
	ConfigureCmd func(*exec.Cmd)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}

// User is an account to run a server as.
type User struct{ UID, GID uint32 }

// Instance is one running MCP server serving one skill version. Its methods
// are safe for concurrent use. Leases and draining are the loader's: an
// Instance serves every Invoke it is given until Close or Kill.
type Instance struct {
	cfg  Config
	log  hclog.Logger
	run  string // the private run folder: app/ (the copy, cwd) and home/
	cmd  *exec.Cmd
	pid  int
	conn *stdioTransport
	cs   *mcpsdk.ClientSession

	tools      atomic.Pointer[toolSet]
	describeMu sync.Mutex // serializes Describe

	releaseApp func() // gives a shared copy back; nil for a private one

	stderr *stderrLog
	junk   atomic.Int64
	// firstJunk is the first non-JSON-RPC line, for a start error.
	firstJunk atomic.Pointer[string]

	exited    chan struct{} // closed once the process is gone
	exitErr   error         // how it ended; written before exited closes
	stopping  atomic.Bool   // set before a deliberate stop, so exit is no crash
	sessionUp chan struct{} // closed when the session watcher ends
	stopOnce  sync.Once
}

// Launch copies the version folder into a private run folder, checks the
// copy's digest, starts the server from the copy with nothing of the host's
// environment, runs initialize and tools/list under the start timeout, and
// returns the running instance. On error nothing is left running and the run
// folder is gone.
func Launch(ctx context.Context, cfg Config) (*Instance, error) {
	cfg = cfg.withDefaults()
	who := cfg.Skill + "@" + cfg.Version
	if err := cfg.Spec.Check(cfg.Interpreters); err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	inst := &Instance{
		cfg: cfg, log: cfg.Logger.Named(who).With("skill", cfg.Skill, "version", cfg.Version, "runtime", "mcp"),
		exited: make(chan struct{}), sessionUp: make(chan struct{}),
	}
	close(inst.sessionUp) // no session yet: nothing to wait for
	inst.stderr = &stderrLog{log: inst.log}
	run, err := os.MkdirTemp(cfg.RunDir, "skillhost-mcp-"+who+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: run folder: %w", who, err)
	}
	inst.run = run
	fail := func(err error) (*Instance, error) {
		inst.Kill()
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	app, home := filepath.Join(run, "app"), filepath.Join(run, "home")
	if cfg.Copies != nil {
		if app, inst.releaseApp, err = cfg.Copies.acquire(ctx, cfg.Dir, cfg.Spec.SHA256, cfg.User); err != nil {
			return fail(err)
		}
	} else if err := privateCopy(ctx, cfg, app); err != nil {
		return fail(err)
	}
	exe, err := ResolveCommand(cfg.Spec.Command, cfg.Interpreters, app)
	if err != nil {
		return fail(err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		return fail(err)
	}
	if u := cfg.User; u != nil {
		if err := openHome(u, run, home); err != nil {
			return fail(fmt.Errorf("open the run folder to uid %d, gid %d: %w", u.UID, u.GID, err))
		}
	}
	var stdin io.WriteCloser
	var stdout io.ReadCloser
	for try := 1; ; try++ {
		var err error
		if inst.cmd, stdin, stdout, err = newCmd(cfg, exe, app, home, inst.stderr); err != nil {
			return fail(err)
		}
		err = inst.start()
		if err == nil {
			break
		}
		// ETXTBSY: another goroutine forked while a file of the copy was
		// open for writing (Go issue 22315); the descriptor closes at that
		// child's exec, so a moment later the exec works.
		if !errors.Is(err, syscall.ETXTBSY) || try == 5 {
			return fail(fmt.Errorf("start %s: %w", exe, err))
		}
		time.Sleep(time.Duration(try) * 20 * time.Millisecond)
	}
	inst.conn = &stdioTransport{stdin: stdin, stdout: stdout, max: cfg.MaxMessageBytes, onJunk: inst.onJunk, onTooLarge: inst.onTooLarge}

	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "skillhost", Version: "1"}, &mcpsdk.ClientOptions{
		// No roots, sampling or elicitation: the host has nothing to
		// offer a server there, and a server then hides the tools that
		// need them.
		Capabilities: &mcpsdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			inst.log.Debug("the server says its tool list changed")
			if cfg.OnToolsChanged != nil {
				cfg.OnToolsChanged(inst)
			}
		},
	})
	cs, err := client.Connect(sctx, inst.conn, nil)
	if err != nil {
		return fail(inst.startError(ctx, sctx, "initialize", err))
	}
	inst.cs = cs
	inst.sessionUp = make(chan struct{})
	go inst.watchSession()
	if _, err := inst.describe(sctx); err != nil {
		return fail(inst.startError(ctx, sctx, "tools/list", err))
	}
	set := inst.tools.Load()
	if len(set.specs) == 0 {
		return fail(fmt.Errorf("%w (%d refused: %s)", ErrNoTools, len(set.refused), refusedList(set.refused)))
	}
	for _, r := range set.refused {
		inst.log.Warn("tool refused", "tool", r.Name, "reason", r.Reason)
	}
	inst.log.Info("mcp server started", "pid", inst.pid, "tools", len(set.specs), "refused", len(set.refused))
	return inst, nil
}

// newCmd builds the server's command: from the copy, with its environment
// alone, stderr to the log, stdin and stdout for the protocol.
func newCmd(cfg Config, exe, app, home string, stderr io.Writer) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(exe, cfg.Spec.Args...)
	cmd.Dir = app
	cmd.Env = buildEnv(cfg.Env, app, home)
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a grandchild holding stderr must not hold Wait
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if u := cfg.User; u != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}}
	}
	if cfg.ConfigureCmd != nil {
		cfg.ConfigureCmd(cmd)
	}
	// SIGKILL, not the SIGTERM of go-plugin skills: a server that ignores
	// SIGTERM must not outlive its host.
	proc.SetGroupAttr(cmd, syscall.SIGKILL)
	return cmd, stdin, stdout, nil
}

// start forks the server from a goroutine locked to its OS thread, which
// stays alive (and locked) until the process is gone: Pdeathsig fires when
// the forking thread exits, not the host.
func (inst *Instance) start() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := inst.cmd.Start(); err != nil {
			started <- err // exited stays open: there was no process
			return
		}
		inst.pid = inst.cmd.Process.Pid
		started <- nil
		err := inst.cmd.Wait()
		proc.KillGroup(inst.pid) // children the server left behind
		if err == nil {
			err = errors.New("exit status 0")
		}
		inst.exitErr = err
		crashed := !inst.stopping.Load()
		close(inst.exited)
		if crashed {
			inst.log.Warn("mcp server exited", "pid", inst.pid, "status", err, "last_stderr", inst.stderr.lastLine())
			if inst.cfg.OnExit != nil {
				inst.cfg.OnExit(inst)
			}
		}
	}()
	return <-started
}

// watchSession ends the process when the session ends on its own (the
// server closed stdout, or the connection broke), so that every way a
// server stops working is one exit, which callers and the supervisor see.
func (inst *Instance) watchSession() {
	defer close(inst.sessionUp)
	_ = inst.cs.Wait()
	if !inst.stopping.Load() {
		select {
		case <-inst.exited:
		default:
			inst.log.Warn("the MCP session ended while the server runs; killing it", "pid", inst.pid)
			proc.KillGroup(inst.pid)
		}
	}
}

// startError names why a start failed: the process exited, the handshake
// timed out (and whether junk on stdout is the likely cause), or the host
// is stopping.
func (inst *Instance) startError(parent, sctx context.Context, phase string, err error) error {
	// A dead process shows as a closed connection first; give its exit a
	// moment to be reaped so the error can say how it ended.
	select {
	case <-inst.exited:
	case <-time.After(200 * time.Millisecond):
	}
	junk := ""
	var junkErr error
	if n := inst.junk.Load(); n > 0 {
		first := ""
		if p := inst.firstJunk.Load(); p != nil {
			first = *p
		}
		junk = fmt.Sprintf("; %d line(s) on stdout were not JSON-RPC, the first: %q", n, first)
		junkErr = ErrStdoutJunk
	}
	select {
	case <-inst.exited:
		return errors.Join(fmt.Errorf("%s: %w (%v); its last stderr line: %q%s", phase, ErrExited, inst.exitErr, inst.stderr.lastLine(), junk), junkErr)
	default:
	}
	if parent.Err() != nil {
		return fmt.Errorf("%s: %w", phase, parent.Err())
	}
	if sctx.Err() != nil {
		return errors.Join(fmt.Errorf("%s: %w within %s%s", phase, ErrInitializeTimeout, inst.cfg.StartTimeout, junk), junkErr)
	}
	return errors.Join(fmt.Errorf("%s: %w%s", phase, err, junk), junkErr)
}

func (inst *Instance) onJunk(line []byte, err error) {
	n := inst.junk.Add(1)
	s := truncate(string(line), 200)
	inst.firstJunk.CompareAndSwap(nil, &s)
	if n <= 10 || n%1000 == 0 {
		inst.log.Warn("skipped a line on stdout that is not JSON-RPC (stdout is the protocol's; log to stderr)", "line", s, "error", err, "count", n)
	}
}

func (inst *Instance) onTooLarge(n int64, response bool) {
	inst.log.Warn("discarded a message over the size cap", "bytes_at_least", n, "cap", inst.cfg.MaxMessageBytes, "response", response)
}

// Describe lists the server's tools again (after its list_changed) and
// makes the new set the one Invoke routes by. It returns the accepted tools;
// Refused says what was left out and why.
func (inst *Instance) Describe(ctx context.Context) ([]registry.ToolSpec, error) {
	return inst.describe(ctx)
}

func (inst *Instance) describe(ctx context.Context) ([]registry.ToolSpec, error) {
	inst.describeMu.Lock()
	defer inst.describeMu.Unlock()
	var tools []*mcpsdk.Tool
	params := &mcpsdk.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
		}
		res, err := inst.cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" || len(tools) > MaxTools {
			break
		}
		params.Cursor = res.NextCursor
	}
	set := mapTools(inst.cfg.Skill, tools, inst.conn.taskOnlyTools())
	inst.tools.Store(set)
	return set.specs, nil
}

// Tools is the current accepted tool set, as registry specs.
func (inst *Instance) Tools() []registry.ToolSpec { return slices.Clone(inst.tools.Load().specs) }

// Refused is what the last tools/list described that the host will not
// serve, with reasons.
func (inst *Instance) Refused() []RefusedTool { return slices.Clone(inst.tools.Load().refused) }

// PID is the server's process id.
func (inst *Instance) PID() int { return inst.pid }

// Exited is closed once the process is gone, whether asked to or not.
func (inst *Instance) Exited() <-chan struct{} { return inst.exited }

// ExitErr says how the process ended; valid once Exited is closed.
func (inst *Instance) ExitErr() error {
	<-inst.exited
	return inst.exitErr
}

// Ping checks that the server answers (MCP ping): a health probe.
func (inst *Instance) Ping(ctx context.Context) error {
	if err := inst.cs.Ping(ctx, nil); err != nil {
		return fmt.Errorf("%s@%s: ping: %w", inst.cfg.Skill, inst.cfg.Version, err)
	}
	return nil
}

// Invoke calls tool (its registry name) with args, a JSON object. It has the
// shape of registry.Backend's Invoke and reports failures as
// *registry.Error: tool_error when the server says isError (or answers the
// call with a JSON-RPC error), response_too_large over maxResponse or over
// MaxMessageBytes, skill_crashed when the process dies during the call,
// skill_unavailable (retryable) once it is gone. ctx's deadline and
// cancellation end the call; the server is sent notifications/cancelled.
func (inst *Instance) Invoke(ctx context.Context, tool string, args []byte, maxResponse int64) ([]byte, error) {
	name := registry.Qualified(inst.cfg.Skill, tool)
	select {
	case <-inst.exited:
		return nil, inst.unavailable(name)
	default:
	}
	wire, ok := inst.tools.Load().wire[tool]
	if !ok {
		return nil, registry.Errorf(registry.CodeUnknownTool, "%s: the MCP server of %s@%s no longer describes this tool", name, inst.cfg.Skill, inst.cfg.Version)
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	res, err := inst.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: wire, Arguments: json.RawMessage(args)})
	if err != nil {
		return nil, inst.callError(ctx, name, err)
	}
	if res.IsError {
		return nil, registry.Errorf(registry.CodeToolError, "%s refused: %s", name, errorText(res))
	}
	out, err := resultJSON(res)
	if err != nil {
		return nil, registry.Errorf(registry.CodeInvalidResponse, "%s: the result cannot be encoded: %v", name, err)
	}
	if maxResponse > 0 && int64(len(out)) > maxResponse {
		return nil, registry.Errorf(registry.CodeResponseTooLarge, "%s: the result is %d bytes, over the skill's max_response_bytes of %d", name, len(out), maxResponse).
			With("limit", maxResponse)
	}
	return out, nil
}

func (inst *Instance) unavailable(name string) error {
	return registry.Errorf(registry.CodeSkillUnavailable, "%s: the MCP server of %s@%s is not running (%v); retry once it is restarted",
		name, inst.cfg.Skill, inst.cfg.Version, inst.exitErr).With("version", inst.cfg.Version)
}

func (inst *Instance) callError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch we.Code {
		case codeTooLarge:
			return registry.Errorf(registry.CodeResponseTooLarge, "%s: %s", name, we.Message).With("limit", inst.cfg.MaxMessageBytes)
		case -32003, -32004, -32005: // the go-sdk's own codes for a closing or rejected connection
		default:
			return registry.Errorf(registry.CodeToolError, "%s refused: %s", name, we.Message).With("tool_code", we.Code)
		}
	}
	// A broken connection is usually a dead process: give its exit a
	// moment to be seen.
	select {
	case <-inst.exited:
		if inst.stopping.Load() {
			return registry.Errorf(registry.CodeSkillUnavailable, "%s: %s@%s is stopping", name, inst.cfg.Skill, inst.cfg.Version)
		}
		return registry.Errorf(registry.CodeSkillCrashed, "%s: the MCP server of %s@%s (pid %d) exited during the call (%v); last stderr line: %q",
			name, inst.cfg.Skill, inst.cfg.Version, inst.pid, inst.exitErr, inst.stderr.lastLine()).With("version", inst.cfg.Version)
	case <-time.After(200 * time.Millisecond):
	}
	if inst.stopping.Load() {
		return registry.Errorf(registry.CodeSkillUnavailable, "%s: %s@%s is stopping", name, inst.cfg.Skill, inst.cfg.Version)
	}
	return registry.Errorf(registry.CodeSkillUnavailable, "%s: the connection to the MCP server of %s@%s failed: %v", name, inst.cfg.Skill, inst.cfg.Version, err)
}

// Close stops the server the way MCP's stdio transport asks: close its
// stdin, wait up to StopTimeout for it to exit, then kill its process group.
// Calls still running fail. The loader drains before it calls Close. Safe to
// call more than once, and with Kill.
func (inst *Instance) Close() { inst.stop(inst.cfg.StopTimeout) }

// Kill kills the server's process group at once and removes its run folder.
// Safe to call more than once.
func (inst *Instance) Kill() { inst.stop(0) }

func (inst *Instance) stop(grace time.Duration) {
	inst.stopOnce.Do(func() {
		inst.stopping.Store(true)
		// Close stdin first, the server's cue to exit: writes still
		// pending (a server that stopped reading) then fail at once,
		// rather than hold the session's Close for their 5 s.
		if inst.conn != nil && inst.conn.conn != nil {
			_ = inst.conn.conn.Close()
		}
		if inst.cs != nil {
			_ = inst.cs.Close()
		}
		if inst.pid > 0 {
			t := time.NewTimer(grace)
			select {
			case <-inst.exited:
			case <-t.C:
				proc.KillGroup(inst.pid)
			}
			t.Stop()
		}
		if inst.cmd != nil && inst.cmd.Process != nil {
			<-inst.exited
		}
		<-inst.sessionUp
		if c := inst.conn; c != nil && c.conn != nil {
			<-c.conn.done       // stdout is closed by Wait: the reader ends
			<-c.conn.writerDone // stdin is closed: the writer ends
		}
		if inst.releaseApp != nil {
			inst.releaseApp()
		}
		if inst.run != "" {
			if err := os.RemoveAll(inst.run); err != nil {
				inst.log.Warn("cannot remove the run folder", "dir", inst.run, "error", err)
			}
		}
	})
}

// privateCopy copies cfg.Dir to app, for this instance alone, and checks
// the copy's digest.
func privateCopy(ctx context.Context, cfg Config, app string) error {
	digest, err := copyFolder(ctx, cfg.Dir, app)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if digest != cfg.Spec.SHA256 {
		return mismatch(cfg.Dir, digest, cfg.Spec.SHA256)
	}
	if u := cfg.User; u != nil {
		if err := openApp(u, app); err != nil {
			return fmt.Errorf("open the copy to gid %d: %w", u.GID, err)
		}
	}
	return nil
}

func mismatch(dir, got, want string) error {
	return fmt.Errorf("%w: %s hashes to %s, the manifest says %s (a copy in progress?)", ErrDigestMismatch, dir, got, want)
}

// openApp lets the server's account read the copy (and run what is
// executable) through its group.
func openApp(u *User, app string) error {
	gid := int(u.GID)
	return filepath.WalkDir(app, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o440)
		switch info, err := d.Info(); {
		case err != nil:
			return err
		case d.IsDir():
			mode = 0o750
		case info.Mode().Perm()&0o100 != 0:
			mode = 0o550
		}
		if err := os.Lchown(p, -1, gid); err != nil {
			return err
		}
		return os.Chmod(p, mode)
	})
}

// openHome gives the server's account its home, and a way through the run
// folder to it.
func openHome(u *User, run, home string) error {
	if err := os.Chown(home, int(u.UID), int(u.GID)); err != nil {
		return err
	}
	return os.Chmod(run, 0o711)
}

// buildEnv is the server's whole environment: PATH and HOME inside the run
// folder, then the manifest's env (which may override them), sorted.
func buildEnv(env map[string]string, app, home string) []string {
	all := map[string]string{"PATH": app, "HOME": home}
	for k, v := range env {
		all[k] = strings.ReplaceAll(v, "${HOME}", home)
	}
	out := make([]string, 0, len(all))
	for k, v := range all {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func refusedList(rs []RefusedTool) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name + ": " + r.Reason
	}
	return strings.Join(parts, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// stderrLog sends the server's stderr to the host's log, line by line
// (MCP servers log there by design), and keeps the last line for errors.
type stderrLog struct {
	log hclog.Logger

	mu      sync.Mutex // guards partial and last
	partial []byte
	last    string
}

const maxStderrLine = 4096

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			if len(w.partial) > maxStderrLine {
				w.emit(string(w.partial))
				w.partial = w.partial[:0]
			}
			return len(p), nil
		}
		w.emit(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

func (w *stderrLog) emit(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	line = truncate(line, maxStderrLine)
	w.last = line
	w.log.Info(line, "stream", "stderr")
}

func (w *stderrLog) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := strings.TrimSpace(string(w.partial)); s != "" {
		return truncate(s, 512)
	}
	return truncate(w.last, 512)
}
