package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
)

// scaleResult is one start of the daemon over a tree of many skills.
type scaleResult struct {
	Tree        string        `json:"tree"`    // scaleOneBinary or scaleDistinct
	Restart     bool          `json:"restart"` // started again over the state folder of the run before
	Skills      int           `json:"skills"`
	MaxParallel int           `json:"max_parallel_starts"` // 0: the daemon's default
	Ready       time.Duration `json:"ready_ns"`            // exec to every skill started (addr file written)
	LoadTook    time.Duration `json:"load_took_ns"`        // the daemon's own "skills loaded ... took"
	Active      int           `json:"active"`
	Tools       int           `json:"tools"`
	Mem         procMem       `json:"mem"`
	HostCPU     time.Duration `json:"host_cpu_ns"`     // CPU the host used until ready
	HostSysCPU  time.Duration `json:"host_sys_cpu_ns"` // of it, in the kernel
	SkillsCPU   time.Duration `json:"skills_cpu_ns"`   // CPU its skills used until ready, summed
	// On a first start, the scan after it (loader.StartVerifiedMessage)
	// judges what the first scan left unread: when it ended, counted from
	// the start, and the host's CPU then (the calls of the run included).
	Judged        time.Duration `json:"judged_ns,omitempty"`
	HostCPUJudged time.Duration `json:"host_cpu_judged_ns,omitempty"`
}

// defaultMaxParallelStarts is the daemon's --max-parallel-starts default
// (cmd/host/serve.go), stated here so the report can say what it measured.
const defaultMaxParallelStarts = 8

// makeScaleTree installs n skills s00..s<n-1>, one version each: all of
// the one binary, or with distinct, each of its own variant of it.
func makeScaleTree(bin *skillBinary, root string, n int, distinct bool) error {
	tmp := filepath.Join(filepath.Dir(root), "variants")
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		b := bin
		if distinct {
			var err error
			if b, err = bin.variant(tmp, i); err != nil {
				return err
			}
		}
		if err := b.install(root, scaleSkill(i), "1.0.0"); err != nil {
			return err
		}
		if distinct {
			os.Remove(b.path)
		}
	}
	return nil
}

func scaleSkill(i int) string { return fmt.Sprintf("s%02d", i) }

// The two scale trees.
const (
	scaleOneBinary = "one binary"        // every skill the same file content: one copy runs them all
	scaleDistinct  = "distinct binaries" // each skill its own content, as in a real tree
)

// scaleRun starts the daemon over root, times it until every skill has
// started, checks that all are active, calls each skill once, then reads
// the resident memory of the host and its skills.
func scaleRun(ctx context.Context, hostBin, root, work string, n, maxParallel int, restart bool) (scaleResult, error) {
	var extra []string
	if maxParallel > 0 {
		extra = []string{"--max-parallel-starts", strconv.Itoa(maxParallel)}
	}
	d, err := startDaemon(hostBin, root, work, extra...)
	if err != nil {
		return scaleResult{}, err
	}
	defer d.stop()
	r := scaleResult{Skills: n, MaxParallel: maxParallel, Ready: d.ready}
	r.HostCPU, r.SkillsCPU = treeCPU(d.cmd.Process.Pid)
	_, r.HostSysCPU = cpuSplit(d.cmd.Process.Pid)
	var skills api.SkillList
	if err := d.get("/v1/skills", &skills); err != nil {
		return r, err
	}
	for _, s := range skills.Skills {
		if s.Active != "" {
			r.Active++
		}
	}
	var health struct {
		Tools int `json:"tools"`
	}
	if err := d.get("/healthz", &health); err != nil {
		return r, err
	}
	r.Tools = health.Tools
	if r.Active != n {
		return r, fmt.Errorf("scale: %d of %d skills active after start; log %s", r.Active, n, d.logPath)
	}
	// One call per skill, 8 at a time, so every process has served.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hp := httpPath(d.url, scaleSkill(i))
			defer hp.close()
			errs <- hp.call(ctx, "echo")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return r, err
		}
	}
	if !restart {
		deadline := time.Now().Add(30 * time.Second)
		for r.Judged = d.logTook(loader.StartVerifiedMessage); r.Judged == 0; r.Judged = d.logTook(loader.StartVerifiedMessage) {
			if time.Now().After(deadline) {
				return r, fmt.Errorf("scale: no %q in the log within 30 s of the calls; log %s", loader.StartVerifiedMessage, d.logPath)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.HostCPUJudged, _ = treeCPU(d.cmd.Process.Pid)
	}
	time.Sleep(300 * time.Millisecond)
	r.Mem = treeMem(d.cmd.Process.Pid)
	if restart {
		// A restart whose digest cache had every binary defers nothing;
		// one that did defer is shown as such.
		if r.Judged = d.logTook(loader.StartVerifiedMessage); r.Judged > 0 {
			r.HostCPUJudged, _ = treeCPU(d.cmd.Process.Pid)
		}
	}
	r.LoadTook = d.loadTook()
	return r, nil
}

// scaleDir returns a fresh work folder for one scale run.
func scaleDir(work string, run int) string {
	return filepath.Join(work, fmt.Sprintf("scale-%d", run))
}

// profileStart starts a loader in this process over root (n skills) with
// the daemon's defaults under a CPU profile, to show where the host's side
// of start-up goes, and returns how long Start took.
func profileStart(ctx context.Context, root, runDir, file string) (time.Duration, error) {
	f, err := os.Create(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	reg := registry.New(registry.Config{})
	l, err := loader.New(loader.Config{Skills: root, Registry: reg, RunDir: runDir})
	if err != nil {
		return 0, err
	}
	defer l.Close(context.Background())
	if err := pprof.StartCPUProfile(f); err != nil {
		return 0, err
	}
	start := time.Now()
	err = l.Start(ctx)
	took := time.Since(start)
	pprof.StopCPUProfile()
	return took, err
}
