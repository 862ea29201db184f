package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// matches its manifest checksum: a copy is in progress, not a broken skill.

// drainBit is set in instance.lease once the instance is draining; the low
// bits count calls in flight. One word makes Acquire and drain race-free
// without a lock on the invoke path.
const drainBit = int64(1) << 62

// maxToolsPerSkill caps what one skill may describe: past it a skill is
// a catalogue, not a skill, and would crowd every other skill out of search.
const maxToolsPerSkill = 1000

// msgOverhead is room for protobuf framing above a manifest's byte limits.
const msgOverhead = 64 << 10

// instance is one running process of one skill version. It implements
// registry.Backend.
type instance struct {
	skill, version string
	ver            manifest.Version
	log            *pidLogger    // every line carries skill, version and, once started, pid
	reaper         *proc.Reaper  // told when the process group is gone; nil: none
	sweeper        *proc.Sweeper // told when the process is gone; nil: none

	releaseBin func() // gives the verified copy back to the binCache
	client     *plugin.Client
	rpc        skillpb.SkillClient
	pid        int
	startedAt  time.Time
	desc       *skillpb.DescribeResponse
	host       *hostService // answers the skill's nested calls; nil when its manifest has no uses
	hostBroker uint32       // the broker id host is served on

	lease     atomic.Int64
	drained   chan struct{} // closed when draining and no call is in flight
	drainOnce sync.Once
	drainEnd  atomic.Int64 // unix nanos of the end of the grace period, once draining

	// retired is set when the grace period ends with calls still in
	// flight; the process is then killed, which fails those calls, and
	// this flag lets them say why.
	retired atomic.Bool

	exited     chan struct{} // closed once the process is gone, for any reason
	stopping   atomic.Bool   // set before a deliberate kill, so exit is not a crash
	threadDone chan struct{} // the thread-locked goroutine has ended
	abortStart func()        // kills the process during its handshake (start)
	stopOnce   sync.Once
	onExit     func(*instance) // called once on an exit that was not asked for, before exited closes

	rt runtimeProc // nil: go-plugin, run by the fields above; else another runtime (runtime.go)
}

var _ registry.Backend = (*instance)(nil)

// warnCapsOnce keeps a host that cannot drop capabilities (a container
// without CAP_SETPCAP) from warning at every launch.
var warnCapsOnce sync.Once

// launchConfig is what launch needs from the loader.
type launchConfig struct {
	bins          *proc.BinCache
	startTimeout  time.Duration
	logger        hclog.Logger
	maxDescribe   int
	onExit        func(*instance)
	textBusyTries int
	mtls          *proc.ClientCert   // the host's side of the mutual TLS with every skill
	user          *proc.SkillUser    // nil: the host's user
	reaper        *proc.Reaper       // nil: none; told of every process group started and stopped
	sweeper       *proc.Sweeper      // nil: none; told of every skill process started and gone
	gomaxprocs    int                // > 0: GOMAXPROCS for a skill whose manifest sets none
	sockDir       string             // the folder the skill makes its go-plugin socket in
	reg           *registry.Registry // where nested calls go (callback.go)
}

// launch starts ver and describes it. On error nothing is left running.
func launch(ctx context.Context, cfg launchConfig, ver manifest.Version) (*instance, error) {
	m := ver.Manifest
	inst := &instance{
		skill: ver.Skill, version: ver.Version, ver: ver,
		log:     newPIDLogger(cfg.logger.Named(ver.Skill+"@"+ver.Version).With("skill", ver.Skill, "version", ver.Version)),
		drained: make(chan struct{}), exited: make(chan struct{}), threadDone: make(chan struct{}),
		onExit: cfg.onExit,
	}
	// No thread yet, so none to wait for: kill on an instance that never
	// started must not block. The start below gives it the real one.
	close(inst.threadDone)
	exe, release, err := cfg.bins.Acquire(ver.EntrypointPath, m.SHA256)
	if err != nil {
		return nil, err
	}
	inst.releaseBin = release
	var lastErr error
	tries := max(cfg.textBusyTries, 1)
	for try := 0; try < tries; try++ {
		lastErr = inst.start(ctx, cfg, exe)
		// ETXTBSY: another thread forked while our copy's fd was open (Go
		// issue 22315); the fd closes at that child's exec, so try again.
		if lastErr == nil || !strings.Contains(lastErr.Error(), "text file busy") {
			break
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
	if lastErr != nil {
		release()
		return nil, lastErr
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.startTimeout)
	defer cancel()
	desc, err := inst.rpc.Describe(dctx, &skillpb.DescribeRequest{}, grpc.MaxCallRecvMsgSize(cfg.maxDescribe))
	if err != nil {
		inst.kill()
		if status.Code(err) == codes.ResourceExhausted {
			return nil, fmt.Errorf("describe: the tool list is larger than the %d-byte cap: %w", cfg.maxDescribe, err)
		}
		return nil, fmt.Errorf("describe: %w", err)
	}
	if err := checkDescribe(ver, desc); err != nil {
		inst.kill()
		return nil, err
	}
	inst.desc = desc
	return inst, nil
}

// start execs the copy through go-plugin from a goroutine locked to its OS
// thread, which stays alive (and locked) for as long as the process runs so
// that Pdeathsig fires only when the host itself dies.
func (inst *instance) start(ctx context.Context, cfg launchConfig, exe string) error {
	m := inst.ver.Manifest
	// abort kills the process while go-plugin waits for its handshake
	// (client.Kill would wait for that, holding the same lock as Start). It
	// is called only then, so it never touches a skill that started.
	abortCtx, abort := context.WithCancel(context.Background())
	inst.abortStart = abort // kill releases it, once the process is gone anyway
	cmd := exec.CommandContext(abortCtx, exe)
	cmd.Dir = inst.ver.Dir
	cmd.Env = append(envList(m.Env), cfg.mtls.Env())
	if cfg.sockDir != "" {
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+cfg.sockDir)
	}
	if _, set := m.Env["GOMAXPROCS"]; cfg.gomaxprocs > 0 && !set {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(cfg.gomaxprocs))
	}
	proc.SetProcAttr(cmd, cfg.user)
	// The skill's own TLS key, on a pipe that the skill alone inherits.
	server, err := proc.NewServerIdentity()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	tlsPipe, err := server.Pipe()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	cmd.ExtraFiles = []*os.File{tlsPipe} // descriptor 3 in the skill
	cmd.Env = append(cmd.Env, sdk.ServerTLSFDEnv+"=3")
	stderrTail := &tailWriter{max: 2048}
	// A skill that declares uses gets the Host service for its nested
	// calls, over the broker multiplexed on its own connection: no new
	// listener, and the skill's certificate required on each stream.
	// Multiplexing puts the connection's calls through yamux too, which
	// costs them a little; skills that call nothing are left without it.
	skillPlugin := &sdk.GRPCPlugin{}
	tlsCfg := cfg.mtls.TLSConfig(server.Leaf())
	if len(m.Uses) > 0 && cfg.reg != nil {
		inst.host = newHostService(inst, cfg.reg)
		skillPlugin.Host = inst.host
		tlsCfg = withBrokerServerAuth(tlsCfg)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:     sdk.Handshake,
		Plugins:             plugin.PluginSet{sdk.PluginName: skillPlugin},
		Cmd:                 cmd,
		AllowedProtocols:    []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCBrokerMultiplex: inst.host != nil,
		// AutoMTLS's protocol with the host-wide client certificate and
		// the host-made server one in place of new P-521 ones per
		// process: see proc.ClientCert.
		TLSConfig:    tlsCfg,
		SkipHostEnv:  true,
		StartTimeout: cfg.startTimeout,
		Logger:       inst.log,
		Stderr:       stderrTail, // the raw stderr, to say why a start failed
		// What a handler prints reaches the host's log (go-plugin carries
		// the skill's stdout and stderr after the handshake).
		SyncStdout: inst.log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info}),
		SyncStderr: inst.log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		// The skill protocol's codec (sdk.Codec, whose buffers fit a large
		// result) and the manifest's limits are the connection's defaults,
		// so a call carries no per-call options: gRPC combines those with
		// the defaults into a new slice on every call (profiles showed it).
		// sdk.DialOptions fixes the flow-control windows, as the skill's
		// server does, so no call is followed by a PING exchange.
		GRPCDialOptions: append(sdk.DialOptions(), grpc.WithDefaultCallOptions(
			grpc.ForceCodecV2(sdk.Codec),
			grpc.MaxCallSendMsgSize(int(m.Limits.WithDefaults().MaxRequestBytes)+msgOverhead),
			grpc.MaxCallRecvMsgSize(int(m.Limits.WithDefaults().MaxResponseBytes)+msgOverhead))),
	})
	started := make(chan error, 1)
	threadDone := make(chan struct{})
	inst.sweeper = cfg.sweeper
	go func() {
		defer close(threadDone)
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the process
		// The capabilities go from this thread alone, which only forks the skill.
		if err := proc.DropSkillCaps(); err != nil {
			warnCapsOnce.Do(func() {
				inst.log.Warn("cannot drop capabilities for root skills; a skill running as root can read the host's memory and environment", "error", err)
			})
		}
		cfg.sweeper.BeginLaunch()
		_, err := client.Start()
		tlsPipe.Close() // the skill has its copy, or is gone
		if err != nil {
			started <- err
			return
		}
		pid := 0
		if rc := client.ReattachConfig(); rc != nil {
			pid = rc.Pid
		}
		cfg.sweeper.EndLaunch(pid)
		started <- nil
		inst.watchExit(client)
	}()
	select {
	case err = <-started:
	case <-ctx.Done():
		// The loader is closing: a handshake that may take the whole start
		// timeout must not hold the host's stop. Killing the process ends
		// client.Start.
		abort()
		if err = <-started; err == nil {
			err = ctx.Err()
		} else {
			err = fmt.Errorf("%w (stopped: %v)", ctx.Err(), err)
		}
	}
	if err != nil {
		client.Kill()
		<-threadDone
		cfg.sweeper.EndLaunch(0) // the process is killed and waited for: nothing to know
		// go-plugin's own message (e.g. "Unrecognized remote plugin
		// message", then a paragraph of generic advice) often hides that
		// the skill just exited: keep its first line and say what the
		// skill last printed, so that one line (host skills) says why.
		if last := stderrTail.lastLine(); last != "" {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			return fmt.Errorf("start: %s; the skill's last stderr line: %q", strings.TrimRight(msg, ": "), last)
		}
		if u := cfg.user; u != nil && strings.Contains(err.Error(), "permission denied") {
			return fmt.Errorf("start: %w; skills run as %s, which must be able to search %s and every folder above it (chmod o+x, or g+x for its group)", err, u, inst.ver.Dir)
		}
		return fmt.Errorf("start: %w", err)
	}
	proto, err := client.Client()
	if err == nil {
		var raw any
		raw, err = proto.Dispense(sdk.PluginName)
		if err == nil {
			inst.rpc = raw.(skillpb.SkillClient)
			inst.hostBroker = skillPlugin.HostBrokerID()
		}
	}
	inst.client = client
	inst.threadDone = threadDone
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
	}
	inst.startedAt = time.Now()
	if err == nil {
		err = proc.ApplyRlimits(inst.pid, m.Limits) // prlimit(2) on the running skill
	}
	if err != nil {
		inst.kill()
		return fmt.Errorf("connect: %w", err)
	}
	inst.log.setPID(inst.pid)
	cfg.reaper.Track(inst.pid) // its own process group: Setpgid
	inst.reaper = cfg.reaper
	return nil
}

// watchExit blocks until the process is gone. It runs on the locked
// thread, keeping that thread (the Pdeathsig parent) alive meanwhile.
func (inst *instance) watchExit(client *plugin.Client) {
	rc := client.ReattachConfig()
	if rc != nil && rc.Pid > 0 {
		proc.WaitExit(rc.Pid, client.Exited)
	} else {
		proc.WaitExit(0, client.Exited)
	}
	// Told at once, before the wait below: the tools must go unavailable
	// now, even while the supervisor is busy launching another version.
	if !inst.stopping.Load() && inst.onExit != nil {
		inst.onExit(inst)
	}
	if rc != nil && rc.Pid > 0 {
		// go-plugin reaps the process and logs its exit status just after;
		// a moment's wait lets a crash report say how the process ended.
		for deadline := time.Now().Add(200 * time.Millisecond); !client.Exited() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Its orphans are the host's children by now (Config.Subreaper).
	inst.sweeper.Trigger()
	close(inst.exited)
}

func checkDescribe(ver manifest.Version, d *skillpb.DescribeResponse) error {
	var errs []error
	if d.Name != ver.Skill {
		errs = append(errs, fmt.Errorf("the binary describes itself as skill %q, not %q", d.Name, ver.Skill))
	}
	if d.Version != ver.Version {
		errs = append(errs, fmt.Errorf("the binary describes itself as version %q, not %q", d.Version, ver.Version))
	}
	if want := ver.Manifest.Tools; len(want) > 0 {
		got := map[string]bool{}
		for _, t := range d.Tools {
			got[t.Name] = true
		}
		for _, name := range want {
			if !got[name] {
				errs = append(errs, fmt.Errorf("the manifest lists tool %q, which the binary does not describe", name))
			}
			delete(got, name)
		}
		for name := range got {
			errs = append(errs, fmt.Errorf("the binary describes tool %q, which the manifest does not list", name))
		}
	}
	if len(d.Tools) == 0 {
		errs = append(errs, errors.New("the binary describes no tools"))
	}
	if len(d.Tools) > maxToolsPerSkill {
		errs = append(errs, fmt.Errorf("the binary describes %d tools, over the cap of %d per skill", len(d.Tools), maxToolsPerSkill))
	}
	return errors.Join(errs...)
}

// spec is the registry's view of the instance.
func (inst *instance) spec() registry.SkillSpec {
	m := inst.ver.Manifest
	l := m.Limits.WithDefaults()
	tags := m.Tags
	if len(tags) == 0 && inst.desc != nil {
		tags = inst.desc.Tags
	}
	desc := m.Description
	if desc == "" && inst.desc != nil {
		desc = inst.desc.Description
	}
	s := registry.SkillSpec{
		Name: inst.skill, Version: inst.version, Description: desc, Tags: tags, Backend: inst,
		Limits: registry.Limits{
			Timeout: l.Timeout(), MaxConcurrency: l.MaxConcurrency,
			MaxRequestBytes: l.MaxRequestBytes, MaxResponseBytes: l.MaxResponseBytes,
		},
	}
	if inst.rt != nil {
		s.Tools = inst.rt.Tools()
		return s
	}
	for _, t := range inst.desc.Tools {
		ts := registry.ToolSpec{
			Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Tags: t.Tags,
		}
		if a := t.Annotations; a != nil {
			ts.Annotations = registry.Annotations{ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
		}
		s.Tools = append(s.Tools, ts)
	}
	return s
}

func (inst *instance) toolNames() []string {
	if inst.rt != nil {
		return inst.runtimeToolNames()
	}
	if inst.desc == nil {
		return nil
	}
	out := make([]string, len(inst.desc.Tools))
	for i, t := range inst.desc.Tools {
		out[i] = registry.Qualified(inst.skill, t.Name)
	}
	return out
}

// Acquire takes a lease unless the instance is draining.
func (inst *instance) Acquire() bool {
	for {
		v := inst.lease.Load()
		if v&drainBit != 0 {
			return false
		}
		if inst.lease.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// Release ends a lease; the last one out of a draining instance signals the
// drain.
func (inst *instance) Release() {
	if inst.lease.Add(-1) == drainBit {
		inst.drainOnce.Do(func() { close(inst.drained) })
	}
}

func (inst *instance) inFlight() int64 { return inst.lease.Load() &^ drainBit }

// beginDrain refuses new leases from now on.
func (inst *instance) beginDrain(grace time.Duration) {
	inst.drainEnd.CompareAndSwap(0, time.Now().Add(grace).UnixNano())
	if inst.lease.Or(drainBit) == 0 {
		inst.drainOnce.Do(func() { close(inst.drained) })
	}
}

// Invoke calls a tool over gRPC. Calls still running when the instance is
// retired fail when its process is killed, with a skill_unavailable error.
// Nothing here arms a timer: the registry's timeout context is the only one.
// Its deadline travels as InvokeRequest.timeout_ns, not as a gRPC deadline,
// so the skill's side arms none either; when it fires, the cancellation
// reaches the skill as a reset stream.
func (inst *instance) Invoke(ctx context.Context, tool string, args []byte, maxResponse int64) ([]byte, error) {
	if inst.rt != nil {
		return inst.rt.Invoke(ctx, tool, args, maxResponse)
	}
	req := &skillpb.InvokeRequest{Tool: tool, Arguments: args}
	if inst.host != nil {
		token, end := inst.host.begin(ctx)
		defer end()
		req.HostBrokerId, req.CallToken, req.CallId = inst.hostBroker, token, registry.CallID(ctx)
	}
	callCtx := ctx
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutNs = max(int64(time.Until(d)), 1)
		callCtx = withoutDeadline{ctx}
	}
	resp, err := inst.rpc.Invoke(callCtx, req)
	if err != nil {
		return nil, inst.callError(ctx, tool, maxResponse, err)
	}
	if e := resp.Error; e != nil {
		return nil, (&registry.Error{
			Code:      registry.CodeToolError,
			Message:   fmt.Sprintf("%s.%s refused: %s", inst.skill, tool, e.Message),
			Retryable: e.Retryable,
		}).With("tool_code", e.Code)
	}
	return resp.Result, nil
}

func (inst *instance) callError(ctx context.Context, tool string, maxResponse int64, err error) error {
	name := registry.Qualified(inst.skill, tool)
	if inst.retired.Load() && ctx.Err() == nil {
		return registry.Errorf(registry.CodeSkillUnavailable,
			"%s: version %s was retired (its grace period ended during the call) and the call was cancelled; retry to reach the current version",
			name, inst.version).With("version", inst.version)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		// The skill's side enforces the propagated deadline too, and its
		// reset can arrive before the host's own timer fires.
		return context.DeadlineExceeded
	case codes.ResourceExhausted:
		return registry.Errorf(registry.CodeResponseTooLarge, "%s: the result is larger than the skill's max_response_bytes of %d", name, maxResponse).
			With("limit", maxResponse)
	case codes.NotFound:
		return registry.Errorf(registry.CodeInvalidResponse, "%s: the skill does not know this tool: %s", name, status.Convert(err).Message())
	case codes.Unavailable, codes.Canceled, codes.Unknown, codes.Internal:
		// A broken connection is usually a dead process: give the exit
		// watcher a moment to confirm it.
		select {
		case <-inst.exited:
			return registry.Errorf(registry.CodeSkillCrashed, "%s: skill %s@%s (pid %d) exited during the call", name, inst.skill, inst.version, inst.pid).
				With("version", inst.version)
		case <-time.After(200 * time.Millisecond):
		}
		if inst.stopping.Load() {
			return registry.Errorf(registry.CodeSkillUnavailable, "%s: skill %s@%s is stopping", name, inst.skill, inst.version)
		}
		return registry.Errorf(registry.CodeSkillUnavailable, "%s: the connection to skill %s@%s failed: %s", name, inst.skill, inst.version, status.Convert(err).Message())
	}
	return registry.Errorf(registry.CodeInvalidResponse, "%s: %v", name, err)
}

// stop drains the instance and then kills it: new leases are refused, calls
// in flight have until the end of grace (or until ctx is done), then they are
// cancelled and the process is killed.
func (inst *instance) stop(ctx context.Context, grace time.Duration) {
	inst.beginDrain(grace)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-inst.drained:
	case <-inst.exited:
	case <-timer.C:
	case <-ctx.Done():
	}
	if inst.inFlight() > 0 {
		inst.retired.Store(true) // the kill below fails the calls still running
	}
	inst.kill()
}

// kill stops the process and its process group and removes the run folder.
// Safe to call more than once.
func (inst *instance) kill() {
	inst.stopOnce.Do(func() {
		if inst.rt != nil {
			inst.killRuntime()
			return
		}
		inst.stopping.Store(true)
		if inst.client != nil {
			inst.client.Kill()
		}
		if inst.pid > 0 {
			proc.KillGroup(inst.pid)
			inst.reaper.Untrack(inst.pid)
		}
		<-inst.threadDone
		if inst.abortStart != nil {
			inst.abortStart()
		}
		if inst.pid > 0 && inst.client != nil && inst.client.Exited() {
			inst.sweeper.Forget(inst.pid) // waited for by go-plugin: the pid is free
		}
		if inst.releaseBin != nil {
			inst.releaseBin()
		}
	})
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int

	mu  sync.Mutex // guards buf
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// lastLine returns the last non-empty line written, trimmed.
func (w *tailWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(w.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// withoutDeadline is ctx with its deadline hidden from gRPC, which would
// otherwise send it as grpc-timeout and make the skill's server arm a timer
// for every call (a tenth of the throughput with 64 callers, in
// BenchmarkThroughput64). Cancellation and values pass through unchanged.
type withoutDeadline struct{ context.Context }

func (withoutDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
