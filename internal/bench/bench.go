package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/skillhost/skillhost/internal/bench/tools"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/host"
)

// Config says what to run and where the binaries are.
type Config struct {
	Repo     string // module root (for git and the registry benchmarks)
	HostBin  string // cmd/host
	SkillBin string // internal/benchskill
	MCPBin   string // internal/benchmcp
	RPCBin   string // internal/benchrpc
	Out      string // results, profiles and logs go here
	Quick    bool
	Command  string    // how the run was started, for the report
	Log      io.Writer `json:"-"` // progress; nil: os.Stderr

	Rounds      int           // measurement rounds; every figure is the median over them
	Serial      int           // serial calls per latency measurement
	SerialMax   time.Duration // but no longer than this (at least 100 calls)
	Window      time.Duration // per throughput measurement
	Warm        time.Duration // warm-up before each throughput measurement
	Concurrency []int
	Swaps       int
	SwapCallers int
	Skills      int   // for the scale test
	ScaleRuns   int   // runs at the daemon's default --max-parallel-starts
	ScaleAlso   []int // other --max-parallel-starts values, one run each
	// ScaleDistinct adds a first start and a restart over a tree of
	// distinct binaries (another ~1 GB written; full mode only).
	ScaleDistinct bool
	SearchIters   int
	SearchCount   int
	ProfileTime   time.Duration
	Pairs         int           // paired (b)/(c) windows at 64 callers, per tool
	PairWindow    time.Duration // each window of a pair
}

// Defaults returns the quick (CI) or full configuration.
func Defaults(quick bool) Config {
	c := Config{
		Quick: quick, Rounds: 6, Serial: 1500, SerialMax: 1500 * time.Millisecond, Window: time.Second, Warm: 150 * time.Millisecond,
		Concurrency: []int{1, 16, 64}, Swaps: 30, SwapCallers: 8, Skills: 50, ScaleRuns: 5, ScaleAlso: []int{4, 16}, ScaleDistinct: true,
		SearchIters: 3000, SearchCount: 3, ProfileTime: 4 * time.Second,
		Pairs: 24, PairWindow: 300 * time.Millisecond,
	}
	if quick {
		c.Rounds, c.Serial, c.SerialMax, c.Window, c.Warm = 2, 300, 400*time.Millisecond, 250*time.Millisecond, 80*time.Millisecond
		c.Swaps, c.ScaleRuns, c.ScaleAlso, c.ScaleDistinct = 20, 1, nil, false
		c.SearchIters, c.SearchCount, c.ProfileTime = 1000, 1, 1500*time.Millisecond
		c.Pairs, c.PairWindow = 6, 200*time.Millisecond
	}
	return c
}

// callStats is one path and tool: medians over the rounds.
type callStats struct {
	P50    time.Duration     `json:"p50_ns"`
	P99    time.Duration     `json:"p99_ns"`
	Tput   map[int]float64   `json:"calls_per_s"`
	Failed int64             `json:"failed"`
	P50s   []time.Duration   `json:"p50_rounds_ns"`
	P99s   []time.Duration   `json:"p99_rounds_ns"`
	Tputs  map[int][]float64 `json:"calls_per_s_rounds"`
	// CPU per call while measuring throughput, in µs: of this process
	// (the callers, and for (b) the registry and loader) and of the
	// path's server processes (the daemon and its skill, the skill, the
	// MCP server...; none for (e)).
	SelfUS  map[int]float64   `json:"self_cpu_us_per_call"`
	PeerUS  map[int]float64   `json:"peer_cpu_us_per_call"`
	SelfUSs map[int][]float64 `json:"self_cpu_us_per_call_rounds"`
	PeerUSs map[int][]float64 `json:"peer_cpu_us_per_call_rounds"`
}

// Results is everything one run measured.
type Results struct {
	Mode     string                           `json:"mode"`
	Command  string                           `json:"command"`
	Machine  machine                          `json:"machine"`
	Config   Config                           `json:"config"`
	Paths    []string                         `json:"paths"`
	Tools    []string                         `json:"tools"`
	Calls    map[string]map[string]*callStats `json:"calls"` // tool -> path key
	Swap     swapResult                       `json:"swap"`
	Scale    []scaleResult                    `json:"scale"`
	Registry registryResult                   `json:"registry"`
	Profiles []profileResult                  `json:"profiles"`
	Paired   map[string]pairedResult          `json:"paired"` // tool -> (b)/(c) in paired windows
	Targets  []Target                         `json:"targets"`
}

// Run runs the suite.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	logf := func(format string, a ...any) { fmt.Fprintf(cfg.Log, "skillbench: "+format+"\n", a...) }
	began := time.Now()
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "skillbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	res := &Results{
		Mode: map[bool]string{true: "quick", false: "full"}[cfg.Quick], Config: cfg, Command: cfg.Command,
		Machine: machine{
			CPU: cpuModel(), Cores: runtime.NumCPU(), MemTotal: memOf("/proc/meminfo", "MemTotal"), Kernel: kernel(),
			GoVer: runtime.Version(), LoadAvg: loadAvg(), Started: began.UTC().Format(time.RFC3339),
		},
		Paths: []string{pathHTTP, pathHTTPUnix, pathHTTPOne, pathRegistry, pathPlugin, pathNetRPC, pathMCP, pathFunc, pathBareHTTP, pathRelay},
		Tools: []string{tools.EchoTool, tools.BlobTool},
		Calls: map[string]map[string]*callStats{},
	}
	res.Machine.Commit, res.Machine.Dirty = gitCommit(cfg.Repo)
	bin, err := newSkillBinary(cfg.SkillBin)
	if err != nil {
		return nil, err
	}

	// The call paths, each over its own process and tree.
	logf("starting the call paths")
	pa, err := daemonPath(cfg.HostBin, bin, filepath.Join(work, "http"), pathHTTP, "127.0.0.1:0", nil)
	if err != nil {
		return nil, err
	}
	defer pa.close()
	regRoot := filepath.Join(work, "reg", "skills")
	if err := bin.install(regRoot, "bench", "1.0.0"); err != nil {
		return nil, err
	}
	pb, reg, ld, err := registryPath(ctx, regRoot, filepath.Join(work, "reg", "run"))
	if err != nil {
		return nil, err
	}
	defer pb.close()
	pc, err := pluginPath(cfg.SkillBin)
	if err != nil {
		return nil, err
	}
	defer pc.close()
	pc2, err := netRPCPath(cfg.RPCBin)
	if err != nil {
		return nil, err
	}
	defer pc2.close()
	pd, err := mcpPath(ctx, cfg.MCPBin)
	if err != nil {
		return nil, err
	}
	defer pd.close()
	pa2, err := daemonPath(cfg.HostBin, bin, filepath.Join(work, "unix"), pathHTTPUnix, "unix:"+filepath.Join(work, "unix", "api.sock"), nil)
	if err != nil {
		return nil, err
	}
	defer pa2.close()
	pa3, err := daemonPath(cfg.HostBin, bin, filepath.Join(work, "one"), pathHTTPOne, "127.0.0.1:0", []string{"GOMAXPROCS=1"}, "--skill-gomaxprocs", "1")
	if err != nil {
		return nil, err
	}
	defer pa3.close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pf, err := bareServerPath(pathBareHTTP, self, filepath.Join(work, "bare"), "-serve-bare-http")
	if err != nil {
		return nil, err
	}
	defer pf.close()
	pg, err := bareServerPath(pathRelay, self, filepath.Join(work, "relay"), "-relay-skill", cfg.SkillBin, "-serve-bare-relay")
	if err != nil {
		return nil, err
	}
	defer pg.close()
	pb.peer = skillPID(ld, "bench")
	paths := []*path{pa, pa2, pa3, pb, pc, pc2, pd, funcPath(), pf, pg}
	for _, p := range paths {
		for _, t := range res.Tools {
			if err := p.call(ctx, t); err != nil {
				return nil, fmt.Errorf("%s %s: first call: %w", p.name, t, err)
			}
		}
	}

	measureCalls(ctx, cfg, res, paths, logf)
	res.Paired = map[string]pairedResult{}
	for _, t := range res.Tools {
		logf("paired windows: %s, (b) against (c), %d callers, %d pairs", t, pairedCallers, cfg.Pairs)
		res.Paired[t] = pairedThroughput(ctx, pb, pc, t, cfg.Pairs, cfg.PairWindow, cfg.Warm)
	}

	// CPU profiles of the invoke path (b), and of the API handler (pkg/api)
	// served in this process over loopback.
	logf("profiling the invoke path")
	for _, t := range res.Tools {
		pr, err := profilePath(ctx, pb, t, 16, cfg.ProfileTime, filepath.Join(cfg.Out, "cpu-invoke-"+t+".pprof"))
		if err != nil {
			return nil, err
		}
		res.Profiles = append(res.Profiles, pr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api.New(api.Config{Registry: reg, Skills: host.APISkills(ld)})}
	go srv.Serve(ln)
	hp := httpPath("http://"+ln.Addr().String(), "bench")
	pr, err := profilePath(ctx, hp, tools.EchoTool, 16, cfg.ProfileTime, filepath.Join(cfg.Out, "cpu-api-inprocess-echo.pprof"))
	hp.close()
	srv.Close()
	if err != nil {
		return nil, err
	}
	pr.Name = "(a') API handler in-process echo"
	res.Profiles = append(res.Profiles, pr)

	// Stop the call paths (and the daemons behind (a), (a2) and (a3))
	// before the phases that start many processes.
	for _, p := range paths {
		p.close()
	}

	logf("hot swap: %d swaps, %d callers", cfg.Swaps, cfg.SwapCallers)
	res.Swap, err = hotSwap(ctx, bin, filepath.Join(work, "swap"), cfg.Swaps, cfg.SwapCallers)
	if err != nil {
		return nil, err
	}

	scaleRoot := filepath.Join(work, "scale", "skills")
	logf("scale: installing %d skills", cfg.Skills)
	if err := makeScaleTree(bin, scaleRoot, cfg.Skills, false); err != nil {
		return nil, err
	}
	// Write the ~1 GB just installed back to disk now, so that the first
	// start does not compete with the kernel's writeback.
	syscall.Sync()
	// Each run at the default parallelism is a first start (a new state
	// folder: no digests cached) followed by a restart over its state
	// folder, as after a host upgrade.
	type scaleCase struct {
		mp      int
		restart bool
	}
	var runs []scaleCase
	for i := 0; i < cfg.ScaleRuns; i++ {
		runs = append(runs, scaleCase{0, false}, scaleCase{0, true})
	}
	for _, mp := range cfg.ScaleAlso {
		runs = append(runs, scaleCase{mp, false})
	}
	dir := ""
	for i, rc := range runs {
		if !rc.restart {
			dir = scaleDir(filepath.Join(work, "scale"), i)
		}
		logf("scale: start %d/%d (max-parallel-starts %s%s)", i+1, len(runs), parallelName(rc.mp), restartName(rc.restart))
		r, err := scaleRun(ctx, cfg.HostBin, scaleRoot, dir, cfg.Skills, rc.mp, rc.restart)
		if err != nil {
			return nil, err
		}
		r.Tree, r.Restart = scaleOneBinary, rc.restart
		res.Scale = append(res.Scale, r)
	}
	if cfg.ScaleDistinct {
		// A tree of 50 distinct binaries, as a real one is: every binary is
		// hashed and copied on its own.
		distinctRoot := filepath.Join(work, "scale-distinct", "skills")
		logf("scale: installing %d skills of distinct binaries", cfg.Skills)
		if err := makeScaleTree(bin, distinctRoot, cfg.Skills, true); err != nil {
			return nil, err
		}
		syscall.Sync()
		dir := scaleDir(filepath.Join(work, "scale-distinct"), 0)
		for _, restart := range []bool{false, true} {
			logf("scale: distinct binaries, start%s", restartName(restart))
			r, err := scaleRun(ctx, cfg.HostBin, distinctRoot, dir, cfg.Skills, 0, restart)
			if err != nil {
				return nil, err
			}
			r.Tree, r.Restart = scaleDistinct, restart
			res.Scale = append(res.Scale, r)
		}
		os.RemoveAll(filepath.Join(work, "scale-distinct"))
	}

	logf("scale: profiling an in-process loader start over the %d skills", cfg.Skills)
	startFile := filepath.Join(cfg.Out, "cpu-loader-start.pprof")
	took, err := profileStart(ctx, scaleRoot, filepath.Join(work, "scale", "inproc-run"), startFile)
	if err != nil {
		return nil, err
	}
	sp := profileResult{Name: fmt.Sprintf("loader.Start over %d skills, in-process", cfg.Skills), File: startFile, Seconds: took.Seconds()}
	sp.Flat, sp.Ours = summarize(startFile)
	res.Profiles = append(res.Profiles, sp)

	logf("registry: search and memory at 10,000 tools (pkg/registry benchmarks)")
	res.Registry, err = registryBench(ctx, cfg.Repo, cfg.Out, cfg.SearchIters, cfg.SearchCount)
	if err != nil {
		return nil, err
	}

	res.Machine.LoadEnd = loadAvg()
	res.Machine.Took = time.Since(began).Seconds()
	res.Targets = evaluate(res)
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(cfg.Out, "results.json"), b, 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

func restartName(restart bool) string {
	if restart {
		return ", restart"
	}
	return ""
}

func parallelName(mp int) string {
	if mp == 0 {
		return fmt.Sprintf("%d, the default", defaultMaxParallelStarts)
	}
	return fmt.Sprint(mp)
}

func gitCommit(repo string) (string, bool) {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, _ := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(st))) > 0
}

// measureCalls measures latency and throughput of every path and tool.
// The paths are interleaved: within a round every path is measured right
// after the others at the same load, in an order that rotates from round
// to round (and runs backwards every other round, so that no path always
// follows the same one: what one leaves behind, such as a daemon's
// garbage collection, falls on its successor), so that the machine's
// background load falls on all of them alike. Every figure is the median over the rounds.
func measureCalls(ctx context.Context, cfg Config, res *Results, paths []*path, logf func(string, ...any)) {
	for _, t := range res.Tools {
		res.Calls[t] = map[string]*callStats{}
		for _, p := range paths {
			res.Calls[t][p.key] = &callStats{Tput: map[int]float64{}, Tputs: map[int][]float64{},
				SelfUS: map[int]float64{}, PeerUS: map[int]float64{}, SelfUSs: map[int][]float64{}, PeerUSs: map[int][]float64{}}
		}
	}
	for round := 0; round < cfg.Rounds; round++ {
		order := make([]*path, len(paths))
		for i := range paths {
			order[i] = paths[(i+round)%len(paths)]
		}
		if round%2 == 1 {
			slices.Reverse(order) // so that no path always follows the same one
		}
		for _, t := range res.Tools {
			logf("round %d/%d: %s serial latency", round+1, cfg.Rounds, t)
			for _, p := range order {
				lat, failed := latency(ctx, p.call, t, cfg.Serial, max(20, cfg.Serial/20), cfg.SerialMax)
				st := res.Calls[t][p.key]
				st.P50s = append(st.P50s, percentile(lat, 0.50))
				st.P99s = append(st.P99s, percentile(lat, 0.99))
				st.Failed += int64(failed)
			}
			for _, c := range cfg.Concurrency {
				logf("round %d/%d: %s throughput, %d callers", round+1, cfg.Rounds, t, c)
				for _, p := range order {
					self0, peer0 := cpuTime(os.Getpid()), p.peerCPU()
					tp, failed, calls := throughput(ctx, p.call, t, c, cfg.Window, cfg.Warm)
					self1, peer1 := cpuTime(os.Getpid()), p.peerCPU()
					st := res.Calls[t][p.key]
					st.Tputs[c] = append(st.Tputs[c], tp)
					st.Failed += failed
					if calls > 0 {
						st.SelfUSs[c] = append(st.SelfUSs[c], float64(self1-self0)/1e3/float64(calls))
						st.PeerUSs[c] = append(st.PeerUSs[c], float64(peer1-peer0)/1e3/float64(calls))
					}
				}
			}
		}
	}
	for _, t := range res.Tools {
		for _, st := range res.Calls[t] {
			st.P50, st.P99 = medianDur(st.P50s), medianDur(st.P99s)
			for c, v := range st.Tputs {
				st.Tput[c] = median(v)
			}
			for c, v := range st.SelfUSs {
				st.SelfUS[c], st.PeerUS[c] = median(v), median(st.PeerUSs[c])
			}
		}
	}
}
