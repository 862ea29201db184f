package mcprt

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// BenchmarkEcho16 calls server-everything's echo with 16 callers at once,
// through this runtime and, in the same run, through a bare go-sdk client
// over the go-sdk's own CommandTransport: the runtime's cost is the
// difference; a third path adds the registry's call path on top. It
// reports each path's median latency and throughput, and the runtime's and
// the registry path's over the bare client's (targets: ratio of p50 ≤ 1.15,
// of calls/s ≥ 0.9).
//
//	go test -run '^$' -bench Echo16 -benchtime 20000x -count 5 ./pkg/mcprt/
func BenchmarkEcho16(b *testing.B) {
	cfg := npmConfig(b, "everything", everythingJS, "stdio")
	ctx := context.Background()
	args := json.RawMessage(`{"message":"hello"}`)

	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, &mcpsdk.ClientOptions{Capabilities: &mcpsdk.ClientCapabilities{}})
	cmd := exec.Command(cfg.Interpreters["node"], filepath.Join(cfg.Dir, everythingJS), "stdio")
	cmd.Dir = cfg.Dir
	cs, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	inst, err := Launch(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()

	// The registry path: what a hosted mcp skill's call goes through
	// (lookup, argument validation, limits, result checks), with a backend
	// that takes no lease, as the loader's would while nothing drains.
	reg := registry.New(registry.Config{})
	if _, err := reg.Put(registry.SkillSpec{Name: cfg.Skill, Version: cfg.Version, Description: "server-everything", Tools: inst.Tools(), Backend: noLease{inst}}); err != nil {
		b.Fatal(err)
	}

	paths := []struct {
		name string
		call func() error
	}{
		{"direct", func() error {
			_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "echo", Arguments: args})
			return err
		}},
		{"mcprt", func() error {
			_, err := inst.Invoke(ctx, "echo", args, 4<<20)
			return err
		}},
		{"registry", func() error {
			_, err := reg.Invoke(ctx, "everything.echo", args)
			return err
		}},
	}
	// The paths take turns in ten rounds, each going first in some of
	// them, so that a machine shared with other work slows them alike.
	const rounds = 10
	per := max(b.N/rounds, callers)
	lat := make([][]time.Duration, len(paths))
	busy := make([]time.Duration, len(paths))
	b.ResetTimer()
	for r := range rounds {
		for k := range paths {
			i := (k + r) % len(paths)
			l, d := callers16(b, per, paths[i].call)
			lat[i] = append(lat[i], l...)
			busy[i] += d
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(paths))
	rate := make([]float64, len(paths))
	for i, p := range paths {
		slices.Sort(lat[i])
		p50[i] = float64(lat[i][len(lat[i])/2].Microseconds())
		rate[i] = float64(len(lat[i])) / busy[i].Seconds()
		b.ReportMetric(p50[i], p.name+"-p50-µs")
		b.ReportMetric(float64(lat[i][len(lat[i])*99/100].Microseconds()), p.name+"-p99-µs")
		b.ReportMetric(rate[i], p.name+"-calls/s")
	}
	b.ReportMetric(p50[1]/p50[0], "p50-ratio")
	b.ReportMetric(rate[1]/rate[0], "rate-ratio")
	b.ReportMetric(p50[2]/p50[0], "reg-p50-ratio")
	b.ReportMetric(rate[2]/rate[0], "reg-rate-ratio")
	b.ReportMetric(0, "ns/op")
}

// noLease is an Instance as a registry.Backend, without the loader's
// leases.
type noLease struct{ *Instance }

func (noLease) Acquire() bool { return true }
func (noLease) Release()      {}

const callers = 16

// callers16 makes n calls from 16 goroutines; it returns their latencies
// and the wall time they took.
func callers16(b *testing.B, n int, call func() error) ([]time.Duration, time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start)
}
