package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// callFunc makes one call of tool and reports whether it failed. It must be
// safe for concurrent use.
type callFunc func(ctx context.Context, tool string) error

// latency makes n serial calls (after warm calls), or as many as fit in
// limit but at least 100, and returns their durations, sorted, and the
// number that failed.
func latency(ctx context.Context, call callFunc, tool string, n, warm int, limit time.Duration) ([]time.Duration, int) {
	for i := 0; i < warm; i++ {
		call(ctx, tool)
	}
	lat := make([]time.Duration, 0, n)
	failed := 0
	began := time.Now()
	for i := 0; i < n && (i < 100 || time.Since(began) < limit); i++ {
		start := time.Now()
		err := call(ctx, tool)
		d := time.Since(start)
		if err != nil {
			failed++
			continue
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return lat, failed
}

// throughput runs callers goroutines that call tool in a loop for window
// (after a warm-up of warm with the same callers) and returns the calls
// completed within the window per second, the number that failed, and
// every call completed from the warm-up to the end (what the CPU measured
// around it paid for). Counting completions, not calls that start and end
// inside the window, keeps the figure right when one call lasts longer
// than the window.
func throughput(ctx context.Context, call callFunc, tool string, callers int, window, warm time.Duration) (float64, int64, int64) {
	var phase atomic.Int32 // 0 warm, 1 measure, 2 stop
	var ok, failed, all atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, f, a int64
			for phase.Load() != 2 {
				err := call(ctx, tool)
				a++
				if phase.Load() != 1 {
					continue // completed outside the window
				}
				if err != nil {
					f++
				} else {
					n++
				}
			}
			ok.Add(n)
			failed.Add(f)
			all.Add(a)
		}()
	}
	time.Sleep(warm)
	phase.Store(1)
	start := time.Now()
	time.Sleep(window)
	phase.Store(2)
	elapsed := time.Since(start)
	wg.Wait()
	return float64(ok.Load()) / elapsed.Seconds(), failed.Load(), all.Load()
}

// percentile returns the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// median of float64 values (0 when empty).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

// pairedCallers is the concurrency of the paired comparison: the issue's
// throughput target is at 64 callers.
const pairedCallers = 64

// pairedResult is (b)'s throughput over (c)'s in windows measured back to
// back, one ratio per pair.
type pairedResult struct {
	Pairs  int       `json:"pairs"`
	Window string    `json:"window"`
	Median float64   `json:"median"`
	Low    float64   `json:"low"` // the 25th and 75th percentiles of the ratios
	High   float64   `json:"high"`
	Ratios []float64 `json:"ratios"`
}

// pairedThroughput measures b and c in short windows back to back, the
// order alternating from pair to pair, and takes the median of the pairs'
// ratios. On a shared machine whose speed drifts over seconds, a ratio of
// two windows a few hundred milliseconds apart is steadier than the ratio
// of two medians taken over rounds that last half a minute (four full runs
// of the same code gave echo (b)/(c) at 64 callers from 0.78 to 1.29 that
// way), as BenchmarkThroughput64 does it in pkg/loader.
func pairedThroughput(ctx context.Context, b, c *path, tool string, pairs int, window, warm time.Duration) pairedResult {
	res := pairedResult{Pairs: pairs, Window: window.String()}
	for i := 0; i < pairs; i++ {
		first, second := b, c
		if i%2 == 1 {
			first, second = c, b
		}
		r1, _, _ := throughput(ctx, first.call, tool, pairedCallers, window, warm)
		r2, _, _ := throughput(ctx, second.call, tool, pairedCallers, window, warm)
		rb, rc := r1, r2
		if i%2 == 1 {
			rb, rc = r2, r1
		}
		if rc > 0 {
			res.Ratios = append(res.Ratios, rb/rc)
		}
	}
	if len(res.Ratios) > 0 {
		s := slices.Clone(res.Ratios)
		slices.Sort(s)
		res.Median = median(s)
		res.Low, res.High = s[len(s)/4], s[(3*len(s))/4]
	}
	return res
}
