package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/mcprt"
	"github.com/skillhost/skillhost/pkg/proc"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// mcpProc is a version of the "mcp" runtime: a stdio MCP server that
// pkg/mcprt runs.
type mcpProc struct {
	*mcprt.Instance
	changed atomic.Bool // list_changed since the last describe
}

func (p *mcpProc) toolsChanged() bool { return p.changed.Swap(false) }

var _ runtimeProc = (*mcpProc)(nil)

// mcpCopies shares the verified copies of MCP version folders between the
// instances of one loader (a restart after a crash reuses its predecessor's
// copy; see mcprt.Copies). They live in the loader's run folder, made at the
// first MCP launch.
type mcpCopies struct {
	once   sync.Once
	copies *mcprt.Copies
	err    error
}

func (c *mcpCopies) get(runDir string) (*mcprt.Copies, error) {
	c.once.Do(func() {
		dir := filepath.Join(runDir, "mcp")
		if c.err = os.MkdirAll(dir, 0o711); c.err == nil {
			c.copies, c.err = mcprt.NewCopies(dir)
		}
	})
	return c.copies, c.err
}

func (c *mcpCopies) close() {
	c.once.Do(func() {}) // none made later
	if c.copies != nil {
		c.copies.Close()
	}
}

// launchMCP starts ver, a "runtime": "mcp" version, as an instance that the
// supervisor treats as it treats a go-plugin one. On error nothing is left
// running; a digest mismatch wraps proc.ErrIncomplete, so the version is
// incomplete (a copy in progress), not failed.
func launchMCP(ctx context.Context, cfg launchConfig, ver manifest.Version, s *supervisor) (*instance, error) {
	m := ver.Manifest
	inst := &instance{
		skill: ver.Skill, version: ver.Version, ver: ver,
		log:     newPIDLogger(cfg.logger.Named(ver.Skill+"@"+ver.Version).With("skill", ver.Skill, "version", ver.Version, "runtime", manifest.RuntimeMCP)),
		drained: make(chan struct{}), exited: make(chan struct{}), threadDone: make(chan struct{}),
		onExit: cfg.onExit, reaper: cfg.reaper, sweeper: cfg.sweeper,
	}
	copies, err := s.l.mcp.get(s.l.cfg.RunDir)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	p := &mcpProc{}
	l := m.Limits.WithDefaults()
	mcfg := mcprt.Config{
		Skill: ver.Skill, Version: ver.Version, Dir: ver.Dir,
		Spec:         mcprt.Spec{Command: m.Command, Args: m.Args, SHA256: m.DigestHex()},
		Env:          m.Env,
		Interpreters: s.l.cfg.Interpreters,
		RunDir:       s.l.cfg.RunDir,
		Logger:       cfg.logger,
		StartTimeout: cfg.startTimeout,
		// A response over max_response_bytes fails its call alone.
		MaxMessageBytes: int(l.MaxResponseBytes) + msgOverhead,
		Copies:          copies,
		OnToolsChanged: func(*mcprt.Instance) {
			p.changed.Store(true)
			s.kickRedescribe()
		},
	}
	if u := cfg.user; u != nil {
		mcfg.User = &mcprt.User{UID: u.UID, GID: u.GID}
	}
	cfg.sweeper.BeginLaunch()
	rt, err := mcprt.Launch(ctx, mcfg)
	if err != nil {
		cfg.sweeper.EndLaunch(0) // killed and waited for
		if errors.Is(err, mcprt.ErrDigestMismatch) {
			return nil, fmt.Errorf("%w: %w", proc.ErrIncomplete, err)
		}
		return nil, err
	}
	p.Instance = rt
	inst.rt, inst.pid, inst.startedAt = p, rt.PID(), time.Now()
	cfg.sweeper.EndLaunch(inst.pid)
	inst.log.setPID(inst.pid)
	cfg.reaper.Track(inst.pid) // its own process group
	go inst.watchRuntime(inst.threadDone)
	if err := proc.ApplyRlimits(inst.pid, m.Limits); err != nil {
		inst.kill()
		return nil, fmt.Errorf("limits: %w", err)
	}
	// The manifest's tools, if it lists them, are checked as a go-plugin
	// skill's are.
	d := &skillpb.DescribeResponse{Name: ver.Skill, Version: ver.Version}
	for _, t := range rt.Tools() {
		d.Tools = append(d.Tools, &skillpb.Tool{Name: t.Name})
	}
	if err := checkDescribe(ver, d); err != nil {
		inst.kill()
		return nil, err
	}
	// A stopped version's copy goes; a crashed one's stays for its restart.
	inst.releaseBin = copies.Prune
	return inst, nil
}
