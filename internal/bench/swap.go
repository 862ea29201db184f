package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
)

// swapResult is the hot-swap measurement.
type swapResult struct {
	Swaps   int             `json:"swaps"`
	Callers int             `json:"callers"`
	Median  time.Duration   `json:"median_ns"`
	P90     time.Duration   `json:"p90_ns"`
	Max     time.Duration   `json:"max_ns"`
	Calls   int64           `json:"calls"`
	Failed  int64           `json:"failed"`
	Errors  []string        `json:"errors,omitempty"` // the first few failures
	All     []time.Duration `json:"all_ns"`
}

// hotSwap runs a watching loader (the daemon's defaults) over a tree with
// bench@1.0.0, keeps callers invoking bench.echo, and installs swaps new
// versions one at a time the way install-skill.sh does (stage, then one
// rename). Each latency runs from the rename to the first call answered by
// the new version. Failed calls are counted.
func hotSwap(ctx context.Context, bin *skillBinary, work string, swaps, callers int) (swapResult, error) {
	root := filepath.Join(work, "skills")
	if err := bin.install(root, "bench", "1.0.0"); err != nil {
		return swapResult{}, err
	}
	reg := registry.New(registry.Config{})
	l, err := loader.New(loader.Config{Skills: root, Registry: reg, RunDir: filepath.Join(work, "run"), Watch: true})
	if err != nil {
		return swapResult{}, err
	}
	defer l.Close(context.Background())
	if err := l.Start(ctx); err != nil {
		return swapResult{}, err
	}
	var seen sync.Map // version -> time.Time of the first call it answered
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var nCalls, nFailed atomic.Int64
	var errMu sync.Mutex // guards errs
	var errs []string
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				res, err := reg.Invoke(context.Background(), "bench.echo", argsFor("echo"))
				now := time.Now()
				nCalls.Add(1)
				if err != nil {
					nFailed.Add(1)
					errMu.Lock()
					if len(errs) < 5 {
						errs = append(errs, err.Error())
					}
					errMu.Unlock()
					continue
				}
				if _, ok := seen.Load(res.Version); !ok {
					seen.LoadOrStore(res.Version, now)
				}
			}
		}()
	}
	res := swapResult{Swaps: swaps, Callers: callers}
	for i := 1; i <= swaps; i++ {
		v := fmt.Sprintf("1.%d.0", i)
		stage, err := bin.stage(root, "bench", v)
		if err != nil {
			cancel()
			wg.Wait()
			return res, err
		}
		start := time.Now()
		if err := os.Rename(stage, filepath.Join(root, "bench", v)); err != nil {
			cancel()
			wg.Wait()
			return res, err
		}
		deadline := start.Add(30 * time.Second)
		for {
			if t, ok := seen.Load(v); ok {
				res.All = append(res.All, t.(time.Time).Sub(start))
				break
			}
			if time.Now().After(deadline) {
				cancel()
				wg.Wait()
				return res, fmt.Errorf("hot swap: version %s never served: %+v", v, l.Status())
			}
			time.Sleep(200 * time.Microsecond)
		}
		// Let the old version drain before the next swap, as an operator
		// installing releases would; it also keeps old processes from
		// piling up.
		waitDrained(l, 5*time.Second)
	}
	cancel()
	wg.Wait()
	res.Calls, res.Failed, res.Errors = nCalls.Load(), nFailed.Load(), errs
	sorted := slices.Clone(res.All)
	slices.Sort(sorted)
	res.Median, res.P90, res.Max = medianDur(sorted), percentile(sorted, 0.9), sorted[len(sorted)-1]
	return res, nil
}

// waitDrained waits until no version of any skill is draining.
func waitDrained(l *loader.Loader, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		draining := false
		for _, s := range l.Status() {
			for _, v := range s.Versions {
				if v.State == loader.StateDraining || v.State == loader.StateStarting {
					draining = true
				}
			}
		}
		if !draining {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
