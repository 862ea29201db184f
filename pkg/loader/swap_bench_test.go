package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// BenchmarkHotSwap measures, with 8 callers invoking in a loop, the time
// from a new version folder appearing to the first call answered by it,
// over 20 swaps, and counts failed calls. "rename" installs each version
// the way install-skill.sh does (stage, then one rename: the fast path);
// "copy" writes the folder in place file by file, so the watcher waits for
// the 300 ms quiet period. Reported: median and max swap latency, failures.
func BenchmarkHotSwap(b *testing.B) {
	for _, mode := range []string{"rename", "copy"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				med, worst, failed, calls := hotSwapRun(b, mode, 20, 8)
				b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
				b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
				b.ReportMetric(float64(failed), "failed-calls")
				b.ReportMetric(float64(calls), "calls")
			}
		})
	}
}

func hotSwapRun(b *testing.B, mode string, swaps, callers int) (median, worst time.Duration, failed, calls int64) {
	root := b.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		b.Fatal(err)
	}
	l, h := benchLoader(b, root)
	defer l.Close(context.Background())
	var seen sync.Map // version -> time first served
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var nFailed, nCalls atomic.Int64
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				nCalls.Add(1)
				res, err := h.Invoke(context.Background(), "svc.echo", []byte(`{}`))
				if err != nil {
					nFailed.Add(1)
					continue
				}
				var r struct{ Version string }
				json.Unmarshal(res.Result, &r)
				seen.LoadOrStore(r.Version, time.Now())
			}
		}()
	}
	var lat []time.Duration
	for i := 1; i <= swaps; i++ {
		v := fmt.Sprintf("1.%d.0", i)
		var start time.Time
		if mode == "rename" {
			stage := filepath.Join(root, ".staging", v)
			os.MkdirAll(filepath.Join(root, ".staging"), 0o755)
			if err := writeVersion(stage, v); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			if err := os.Rename(stage, filepath.Join(root, "svc", v)); err != nil {
				b.Fatal(err)
			}
		} else {
			start = time.Now()
			if err := writeVersion(filepath.Join(root, "svc", v), v); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if t, ok := seen.Load(v); ok {
				lat = append(lat, t.(time.Time).Sub(start))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("version %s never served", v)
			}
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)-1], nFailed.Load(), nCalls.Load()
}

// writeVersion writes a version folder file by file (not atomically).
func writeVersion(dir, version string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sum, err := testenv.SHA256File(testSkillBin)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(testSkillBin)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "skill"), data, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), testenv.Version{Skill: "svc", Version: version}.Manifest(sum), 0o644)
}
