package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/mcprt"
	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Config configures a Loader. Zero durations take the documented defaults.
type Config struct {
	Skills   string             // the watched tree; required
	Registry *registry.Registry // required
	Logger   hclog.Logger

	// RunDir is where the private copies of running entrypoints go: the
	// loader makes a folder of its own in it (skillhost-run-*), removes it
	// on Close, and removes those of hosts that died without doing so. It is
	// never emptied, so sharing it (a daemon and an embedded host mcp) or
	// pointing it at a folder that holds other files is safe. Default:
	// os.TempDir.
	RunDir string
	// Grace is how long a replaced or stopping version may finish its
	// in-flight calls. Default 30 s.
	Grace time.Duration
	// StartTimeout bounds the handshake and the Describe call. Default 10 s.
	StartTimeout time.Duration
	// MaxParallelStarts bounds concurrent launches. Default 8.
	MaxParallelStarts int
	// StrictModes refuses world-writable or foreign-owned skill files.
	StrictModes bool
	// SkillUser, when set, is the account every skill runs as (with no
	// supplementary groups). It needs a host running as root; the run
	// folder is then opened to the user's group, and each version folder
	// (the skill's working directory) must be searchable by the user.
	// Default: skills run as the host's user.
	SkillUser *proc.SkillUser
	// MaxDescribeBytes caps a skill's Describe answer. Default 16 MiB.
	MaxDescribeBytes int
	// SkillGOMAXPROCS, when above 0, is the GOMAXPROCS every skill starts
	// with unless its manifest's env sets one. Go's default, a processor
	// per core, suits a process that has the machine to itself; a skill
	// shares it with the host, its callers and the other skills, and on a
	// machine of few cores one processor serves a light tool's calls with
	// fewer hand-overs between cores (docs/performance.md measured a
	// serial small call 23 % faster on two cores). 0 leaves Go's default.
	SkillGOMAXPROCS int

	// Reaper is the command (argv) of a watchdog process started beside the
	// skills (proc.Reaper): a binary whose main calls proc.MaybeRunReaper
	// first (the host's own, proc.ReaperCommand; the arguments only name it
	// in ps). If the host dies without stopping its skills (SIGKILL, a
	// crash), the watchdog kills every skill's process group, also a skill
	// that ignores the SIGTERM of its parent-death signal. Nil: no watchdog.
	Reaper []string
	// Subreaper makes the host process a child subreaper (Linux): whatever a
	// skill leaves behind when it exits, also a child that left its process
	// group with setsid, becomes the host's child, and the loader kills
	// every child of the host it did not start itself, within a moment of
	// the skill's exit (and a periodic look, every 2 s). A skill may start
	// children, but none that detaches from its parent (a double fork).
	// Only for a process whose every child the loader starts (host serve,
	// host mcp), never for a library user or a test binary. Ignored off
	// Linux.
	Subreaper bool
	// Interpreters is the operator's allow map for "runtime": "mcp"
	// versions (host serve --runtime node=/usr/bin/node): the only host
	// programs a manifest can name as its command. A version naming another
	// fails with mcprt.ErrUnknownInterpreter; the others are unaffected.
	Interpreters mcprt.Interpreters
	// Watch follows the tree with fsnotify after Start.
	Watch bool
	// Debounce is the quiet period that merges bursts of file events.
	// Default 300 ms. A tree that never goes quiet (a skill writing into its
	// own folder) is rescanned at least every 10 debounce periods all the same.
	Debounce time.Duration
	// Resync is the period of the full rescan that backs up fsnotify.
	// Default 30 s.
	Resync time.Duration

	// RestartBackoff is the first delay before restarting a crashed skill,
	// doubling up to RestartBackoffMax; it resets after RestartResetAfter
	// of uptime. Defaults 250 ms, 30 s, 60 s.
	RestartBackoff    time.Duration
	RestartBackoffMax time.Duration
	RestartResetAfter time.Duration

	// State keeps operator decisions (disable, pin). Default: a
	// LocalStateStore in memory.
	State StateStore
	// DigestCache is a file that keeps the entrypoints' digests across
	// restarts (see manifest.HashCache), so a host restarting over an
	// unchanged tree reads each binary once, when it copies it to run,
	// instead of twice. Empty: digests are kept in memory only.
	DigestCache string

	// OnEvent receives every lifecycle event. It must not block.
	OnEvent func(Event)
	// OnSwap receives the duration of each registry swap, for metrics.
	OnSwap func(time.Duration)
	// OnScan receives every scan's tree, for metrics. It must not block.
	OnScan func(*manifest.Tree, error)
}

// Loader runs the skills of one tree.
type Loader struct {
	cfg     Config
	sockDir string // where skills create their go-plugin sockets
	reg     *registry.Registry
	log     hclog.Logger
	hashes  *manifest.HashCache
	mtls    *proc.ClientCert // made once: see proc.ClientCert
	// digestSaveFailing is set while saving DigestCache fails, so the
	// warning is logged once; guarded by scanMu.
	digestSaveFailing bool
	launchSem         chan struct{}
	bins              *proc.BinCache
	mcp               mcpCopies // the "mcp" runtime's verified folder copies

	ctx        context.Context // canceled by Close: supervisors and the watcher stop
	cancel     context.CancelFunc
	hardStop   context.Context // canceled when Close's ctx ends: drains are cut short
	hardCancel context.CancelFunc
	wg         sync.WaitGroup

	scanMu sync.Mutex // serializes scans so dispatches arrive in order

	supMu        sync.Mutex // guards sups and treeProblems
	sups         map[string]*supervisor
	treeProblems manifest.Problems

	ready     atomic.Bool
	closeOnce sync.Once
	reaper    *proc.Reaper  // nil without Config.Reaper
	sweeper   *proc.Sweeper // nil without Config.Subreaper
	// sweepDone stops the sweeper after one last sweep; sweepStopped is
	// closed when it has returned.
	sweepDone, sweepStopped chan struct{}
	// rewatch asks the watcher to look for folders it does not watch yet,
	// after a rescan it did not run itself (API, SIGHUP). Capacity 1: kicks merge.
	rewatch chan struct{}
	// instr is the tree's Agent Skills (instructions.go).
	instr instructions
}

const (
	runDirPrefix = "skillhost-run-"
	ownerFile    = "owner.pid"
)

// makeRunDir makes this loader's run folder in parent (os.TempDir if
// empty), after removing the stale ones there. With a skill user the
// folder is searchable, not listable, by others: the skill user reaches
// its copy by a path with a random part, inside a folder of its group.
func makeRunDir(parent string, forSkillUser bool) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	} else if err := os.MkdirAll(parent, 0o711); err != nil {
		return "", fmt.Errorf("loader: run folder: %w", err)
	}
	if forSkillUser {
		if fi, err := os.Stat(parent); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return "", fmt.Errorf("loader: run folder %s is not searchable by the skill user (mode %04o): make it 0711, or choose another", parent, fi.Mode().Perm())
		}
	}
	removeStaleRunDirs(parent)
	dir, err := os.MkdirTemp(parent, runDirPrefix)
	if err != nil {
		return "", fmt.Errorf("loader: run folder: %w", err)
	}
	// Without its owner's pid a folder is never known to be stale, so a
	// host killed later would leave it behind for good.
	err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
	if err == nil && forSkillUser {
		err = os.Chmod(dir, 0o711)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("loader: run folder %s: %w", dir, err)
	}
	return dir, nil
}

// maxSockDir leaves room in a socket path (108 bytes on Linux, 104 on
// BSDs) for go-plugin's "/plugin" and a random number.
const maxSockDir = 80

// makeSockDir makes the folder skills create their sockets in: the host's
// alone, or with a skill user, writable by that user's group too.
func makeSockDir(dir string, gid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if gid < 0 {
		return nil
	}
	if err := os.Chown(dir, -1, gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o770)
}

// removeStaleRunDirs deletes the run folders of hosts that died without
// cleaning up (SIGKILL), found by the pid each one records.
func removeStaleRunDirs(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, runDirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}

// New checks cfg and returns a loader that has not started anything yet.
func New(cfg Config) (*Loader, error) {
	if cfg.Skills == "" {
		return nil, errors.New("loader: Config.Skills is required")
	}
	if cfg.Registry == nil {
		return nil, errors.New("loader: Config.Registry is required")
	}
	abs, err := filepath.Abs(cfg.Skills)
	if err != nil {
		return nil, fmt.Errorf("loader: skills folder: %w", err)
	}
	cfg.Skills = abs
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	if cfg.MaxParallelStarts <= 0 {
		cfg.MaxParallelStarts = 8
	}
	if cfg.MaxDescribeBytes <= 0 {
		cfg.MaxDescribeBytes = 16 << 20
	}
	if cfg.SkillGOMAXPROCS < 0 {
		return nil, fmt.Errorf("loader: a skill's GOMAXPROCS must be 0 (Go's default) or more, not %d", cfg.SkillGOMAXPROCS)
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 300 * time.Millisecond
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = 250 * time.Millisecond
	}
	if cfg.RestartBackoffMax <= 0 {
		cfg.RestartBackoffMax = 30 * time.Second
	}
	if cfg.State == nil {
		cfg.State = NewStateStore()
	}
	if cfg.RestartResetAfter <= 0 {
		cfg.RestartResetAfter = 60 * time.Second
	}
	gid := -1
	if u := cfg.SkillUser; u != nil {
		if euid := os.Geteuid(); euid != 0 && int(u.UID) != euid {
			return nil, fmt.Errorf("loader: skills can run as %s only when the host runs as root (it runs as uid %d)", u, euid)
		}
		gid = int(u.GID)
	}
	mtls, err := proc.NewClientCert()
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	hashes := manifest.NewHashCache()
	if cfg.DigestCache != "" {
		var warning string
		if hashes, warning = manifest.OpenHashCache(cfg.DigestCache); warning != "" {
			cfg.Logger.Warn(warning)
		}
	}
	l := &Loader{
		cfg: cfg, reg: cfg.Registry, log: cfg.Logger, hashes: hashes, mtls: mtls,
		launchSem: make(chan struct{}, cfg.MaxParallelStarts), sups: map[string]*supervisor{},
		rewatch: make(chan struct{}, 1), instr: newInstructions(),
	}
	dir, err := makeRunDir(cfg.RunDir, gid >= 0)
	if err != nil {
		return nil, err
	}
	l.cfg.RunDir = dir
	// The skills' go-plugin sockets go in the run folder rather than in the
	// temp folder: those of skills killed with a killed host (the watchdog
	// does that) go with the folder, at the next start, instead of staying.
	if sock := filepath.Join(dir, "sock"); len(sock) <= maxSockDir {
		if err := makeSockDir(sock, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("loader: run folder: %w", err)
		}
		l.sockDir = sock
	} else {
		l.log.Info("the run folder's path is too long for unix sockets; skills make theirs in the temp folder", "run_dir", dir)
	}
	l.bins = proc.NewBinCache(filepath.Join(l.cfg.RunDir, "bin"), gid, hashes)
	if len(cfg.Reaper) > 0 {
		r, err := proc.StartReaper(cfg.Reaper)
		if err != nil {
			os.RemoveAll(l.cfg.RunDir)
			return nil, err
		}
		l.reaper = r
	}
	if cfg.Subreaper {
		sw, err := proc.NewSweeper(l.log)
		if err != nil {
			l.reaper.Close()
			os.RemoveAll(l.cfg.RunDir)
			return nil, fmt.Errorf("loader: %w", err)
		}
		sw.Adopt(l.reaper.PID())
		l.sweeper = sw
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.hardStop, l.hardCancel = context.WithCancel(context.Background())
	if l.sweeper != nil {
		l.sweepDone, l.sweepStopped = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(l.sweepStopped)
			l.sweeper.Run(l.sweepDone)
		}()
	}
	return l, nil
}

// StartVerifiedMessage is logged once the scan that follows a start which
// deferred hashing has judged every version, with how long the start took
// until then and how many entrypoints that scan read.
const StartVerifiedMessage = "every version judged after start"

// Start scans the tree, launches every skill's desired version in parallel
// and returns once each has started or failed. With Config.Watch it then
// follows the tree. A broken skill never makes Start fail; only an
// unreadable tree does.
func (l *Loader) Start(ctx context.Context) error {
	if _, err := os.Stat(l.cfg.Skills); err != nil {
		return fmt.Errorf("loader: skills folder: %w", err)
	}
	// The watches go in before the first scan, so a change made while it runs
	// is queued as an event instead of waiting for the periodic resync.
	var w *watcher
	if l.cfg.Watch {
		var err error
		if w, err = newWatcher(l); err != nil {
			return fmt.Errorf("loader: watch %s: %w (run with the watcher off and rescan on SIGHUP, or raise fs.inotify.max_user_instances)", l.cfg.Skills, err)
		}
	}
	// The first scan does not read the binaries it has no digest for: each
	// one that is launched is hashed as it is copied to run, which is the
	// check that counts, so a first start reads it once instead of twice.
	began := time.Now()
	deferred, err := l.rescan(ctx, true)
	if err != nil {
		if w != nil {
			w.fs.Close()
		}
		return err
	}
	l.ready.Store(true)
	l.followState()
	if deferred {
		// Then a full scan, in the background, judges what was left unread
		// (versions that did not launch, paths sharing another's copy), so
		// status and later rescans have every verdict and digest.
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			reads := l.hashes.Reads()
			if err := l.Rescan(l.ctx); err != nil {
				if l.ctx.Err() == nil {
					l.log.Warn("the scan after start failed", "error", err)
				}
				return
			}
			l.log.Info(StartVerifiedMessage, "took", time.Since(began), "read", l.hashes.Reads()-reads)
		}()
	}
	if w != nil {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			w.run(l.ctx)
		}()
	}
	return nil
}

// Rescan reads the whole tree and waits until every skill has acted on it.
// The watcher also looks again for folders to watch.
func (l *Loader) Rescan(ctx context.Context) error {
	_, err := l.rescan(ctx, false)
	return err
}

// rescan is Rescan, with deferHash passed to the scan
// (manifest.Options.DeferHash); it reports whether any binary was left unread.
func (l *Loader) rescan(ctx context.Context, deferHash bool) (deferred bool, err error) {
	dones, deferred, err := l.scanAndDispatch(deferHash)
	if err != nil {
		return false, err
	}
	select {
	case l.rewatch <- struct{}{}:
	default:
	}
	for _, d := range dones {
		select {
		case <-d:
		case <-ctx.Done():
			return deferred, ctx.Err()
		}
	}
	return deferred, nil
}

// scanAndDispatch scans and hands each skill its desired state. It reports
// whether the scan left any binary unread (deferHash).
func (l *Loader) scanAndDispatch(deferHash bool) ([]<-chan struct{}, bool, error) {
	l.scanMu.Lock()
	defer l.scanMu.Unlock()
	if l.ctx.Err() != nil {
		return nil, false, errors.New("loader: closed")
	}
	tree, err := manifest.Scan(l.cfg.Skills, manifest.Options{StrictModes: l.cfg.StrictModes, Hashes: l.hashes, DeferHash: deferHash})
	found := l.scanInstructions(tree, err)
	if l.cfg.OnScan != nil {
		l.cfg.OnScan(tree, err)
	}
	if err != nil {
		l.log.Error("scan failed", "skills", l.cfg.Skills, "error", err)
		return nil, false, fmt.Errorf("loader: scan %s: %w", l.cfg.Skills, err)
	}
	deferred := false
	bySkill := map[string][]manifest.Version{}
	for _, v := range tree.Versions {
		bySkill[v.Skill] = append(bySkill[v.Skill], v)
		deferred = deferred || v.HashDeferred
	}
	l.supMu.Lock()
	l.treeProblems = tree.Problems
	for name := range bySkill {
		if _, ok := l.sups[name]; !ok {
			s := newSupervisor(l, name)
			l.sups[name] = s
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				s.run(l.ctx)
			}()
		}
	}
	// Handed out under supMu, so a supervisor leaving (leaveIfGone) either
	// left before this scan (and a skill that is back got a new one above)
	// or sees this update and stays.
	var dones []<-chan struct{}
	for _, s := range l.sups {
		d := desired{versions: bySkill[s.name]}
		d.disabled, d.pin = l.cfg.State.Get(s.name)
		dones = append(dones, s.update(d))
	}
	l.supMu.Unlock()
	l.saveDigests()
	l.publishInstructions(found)
	return dones, deferred, nil
}

// saveDigests writes the digest cache after a scan (while the scan's
// launches run). A failure is logged once until a save succeeds again: it
// only costs the next start a re-read of the binaries.
func (l *Loader) saveDigests() {
	if l.cfg.DigestCache == "" {
		return
	}
	err := l.hashes.Save(l.cfg.DigestCache)
	if err != nil && !l.digestSaveFailing {
		l.log.Warn("cannot save the digest cache; the next start hashes every entrypoint again", "file", l.cfg.DigestCache, "error", err)
	}
	l.digestSaveFailing = err != nil
}

// launchVersion launches one version, bounded by MaxParallelStarts.
func (l *Loader) launchVersion(ctx context.Context, ver manifest.Version, s *supervisor) (*instance, error) {
	select {
	case l.launchSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.launchSem }()
	l.emit(Event{Skill: ver.Skill, Version: ver.Version, State: StateStarting})
	cfg := launchConfig{
		bins: l.bins, startTimeout: l.cfg.StartTimeout, logger: l.log,
		maxDescribe: l.cfg.MaxDescribeBytes, onExit: s.onExit, textBusyTries: 5,
		user: l.cfg.SkillUser, reaper: l.reaper, sweeper: l.sweeper, mtls: l.mtls, sockDir: l.sockDir,
		gomaxprocs: l.cfg.SkillGOMAXPROCS, reg: l.reg,
	}
	if ver.Manifest.RuntimeName() == manifest.RuntimeMCP {
		return launchMCP(ctx, cfg, ver, s)
	}
	return launch(ctx, cfg, ver)
}

// put publishes inst's tools. Everything in a spec comes from the skill, so
// a panic while compiling it (a bug in a dependency meeting hostile input)
// fails this version rather than the host.
func (l *Loader) put(inst *instance) (err error) {
	defer func() {
		if p := recover(); p != nil {
			l.log.Error("panic while registering a skill's tools", "skill", inst.skill, "version", inst.version, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error registering the tools: %v", p)
		}
	}()
	_, err = l.reg.Put(inst.spec())
	return err
}

func (l *Loader) emit(e Event) {
	e.Type = "lifecycle"
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	args := []any{"skill", e.Skill, "version", e.Version, "from", e.From, "to", e.State}
	if e.PID != 0 {
		args = append(args, "pid", e.PID)
	}
	if e.Reason != "" {
		args = append(args, "reason", e.Reason)
	}
	if e.Restart {
		args = append(args, "restart", true)
	}
	if e.Duration != 0 {
		args = append(args, "duration", e.Duration.Round(time.Microsecond))
	}
	switch e.State {
	case StateFailed, StateCrashed, StateInvalid:
		l.log.Warn("skill "+string(e.State), args...)
	case StateStarting:
		l.log.Debug("skill starting", args...)
	default:
		l.log.Info("skill "+string(e.State), args...)
	}
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(e)
	}
}

func (l *Loader) observeSwap(d time.Duration) {
	if l.cfg.OnSwap != nil {
		l.cfg.OnSwap(d)
	}
}

// Status returns every skill's state, sorted by name.
func (l *Loader) Status() []SkillStatus {
	l.supMu.Lock()
	sups := make([]*supervisor, 0, len(l.sups))
	for _, s := range l.sups {
		sups = append(sups, s)
	}
	l.supMu.Unlock()
	out := make([]SkillStatus, 0, len(sups))
	for _, s := range sups {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Skill returns one skill's state.
func (l *Loader) Skill(name string) (SkillStatus, bool) {
	l.supMu.Lock()
	s, ok := l.sups[name]
	l.supMu.Unlock()
	if !ok {
		return SkillStatus{}, false
	}
	return s.status(), true
}

// TreeProblems are problems of the tree itself (bad skill folder names).
func (l *Loader) TreeProblems() manifest.Problems {
	l.supMu.Lock()
	defer l.supMu.Unlock()
	return l.treeProblems
}

// Close stops watching and drains every skill with the grace period, then
// stops them. When ctx ends first, drains are cut short: calls still running
// are cancelled and processes killed at once. Safe to call twice.
func (l *Loader) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.scanMu.Lock()
		l.cancel()
		l.scanMu.Unlock()
		stopped := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				l.hardCancel()
			case <-stopped:
			}
		}()
		l.wg.Wait()
		close(stopped)
		l.hardCancel()
		if l.sweeper != nil {
			close(l.sweepDone) // one last sweep for what the skills left
			<-l.sweepStopped
		}
		l.reaper.Close() // every skill is stopped: the watchdog may go
		l.mcp.close()
		os.RemoveAll(l.cfg.RunDir)
	})
	return nil
}
