package loader

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

var benchArgs = []byte(`{"msg":"hello"}`)

// BenchmarkInvoke compares, in one run, a trivial call through the whole
// registry path (lookup, schema validation, limits, lease, gRPC) with the
// same call made straight over a bare go-plugin gRPC client.
func BenchmarkInvoke(b *testing.B) { benchInvoke(b, "echo", benchArgs) }

// BenchmarkInvokeBlob is BenchmarkInvoke with a 64 KiB result: its
// allocations per call show what the host copies of a large result.
func BenchmarkInvokeBlob(b *testing.B) { benchInvoke(b, "big", benchBlobArgs) }

// benchBlobArgs ask the test skill's big tool for the harness's blob size.
var benchBlobArgs = []byte(`{"bytes":65536}`)

func benchInvoke(b *testing.B, tool string, args []byte) {
	b.Run("registry", func(b *testing.B) {
		reg, _, stop := benchRegistry(b)
		defer stop()
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := reg.Invoke(ctx, "svc."+tool, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare-go-plugin", func(b *testing.B) {
		rpc, stop := bareClient(b)
		defer stop()
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := rpc.Invoke(ctx, &skillpb.InvokeRequest{Tool: tool, Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInvokeInterleaved makes the same two calls alternately in one
// loop and reports each one's median latency and their ratio, so that the
// drift of a shared machine hits both sides alike.
func BenchmarkInvokeInterleaved(b *testing.B) {
	reg, _, stopReg := benchRegistry(b)
	defer stopReg()
	rpc, stopBare := bareClient(b)
	defer stopBare()
	ctx := context.Background()
	viaReg := make([]time.Duration, 0, b.N)
	viaBare := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := reg.Invoke(ctx, "svc.echo", benchArgs); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := rpc.Invoke(ctx, &skillpb.InvokeRequest{Tool: "echo", Arguments: benchArgs}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		viaReg = append(viaReg, t1.Sub(t0))
		viaBare = append(viaBare, t2.Sub(t1))
	}
	b.StopTimer()
	r, c := median(viaReg), median(viaBare)
	b.ReportMetric(float64(r.Nanoseconds())/1e3, "registry-p50-us")
	b.ReportMetric(float64(c.Nanoseconds())/1e3, "bare-p50-us")
	b.ReportMetric(float64(r)/float64(c), "ratio")
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkInvokeParallel is the same comparison with concurrent callers.
func BenchmarkInvokeParallel(b *testing.B) {
	b.Run("registry", func(b *testing.B) {
		reg, _, stop := benchRegistry(b)
		defer stop()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := reg.Invoke(context.Background(), "svc.echo", benchArgs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("bare-go-plugin", func(b *testing.B) {
		rpc, stop := bareClient(b)
		defer stop()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := rpc.Invoke(context.Background(), &skillpb.InvokeRequest{Tool: "echo", Arguments: benchArgs}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func benchRegistry(b *testing.B) (*registry.Registry, *Loader, func()) {
	root := b.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: testSkillBin,
		Limits: map[string]any{"max_concurrency": 4096}}); err != nil {
		b.Fatal(err)
	}
	l, reg := benchLoader(b, root)
	return reg, l, func() { l.Close(context.Background()) }
}

// benchLoader starts a watching loader with the daemon's defaults but a
// short grace period.
func benchLoader(b *testing.B, root string) (*Loader, *registry.Registry) {
	reg := registry.New(registry.Config{})
	l, err := New(Config{Skills: root, Registry: reg, Grace: time.Second, Watch: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return l, reg
}

// bareClient starts the test skill with go-plugin as the loader does (its
// handshake, AutoMTLS, only the given environment, the skill protocol's
// codec as the connection's default) and returns the bare gRPC stub.
// activeInstance is the instance serving skill in l, for benchmarks that
// call the loader's side of the path without the registry.
func activeInstance(l *Loader, skill string) *instance {
	l.supMu.Lock()
	s := l.sups[skill]
	l.supMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

func bareClient(b *testing.B) (skillpb.SkillClient, func()) {
	cmd := exec.Command(testSkillBin)
	cmd.Env = []string{"TESTSKILL_NAME=svc", "TESTSKILL_VERSION=1.0.0"}
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: sdk.Handshake, Plugins: sdk.PluginSet(nil), Cmd: cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC}, AutoMTLS: true, SkipHostEnv: true,
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.ForceCodecV2(sdk.Codec), grpc.MaxCallRecvMsgSize(sdk.MaxMessageBytes))},
	})
	proto, err := c.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := proto.Dispense(sdk.PluginName)
	if err != nil {
		b.Fatal(err)
	}
	return raw.(skillpb.SkillClient), c.Kill
}

// BenchmarkThroughput64 measures calls per second with 64 concurrent callers
// through the registry and straight over a bare go-plugin client, in short
// alternating windows so that a shared machine's drift hits every path
// alike, and reports each path's median and the ratios to bare. The bare
// client has the loader's connection defaults (sdk.Codec, message limits),
// so registry/bare is the registry's and loader's own cost. The
// bare-deadline path is bare with a per-call timeout context that gRPC
// sends to the skill (whose side then sets a timer too), bare-timer is bare
// with a host-side timer, and the loader paths call the serving instance
// straight, without and then with the registry's timeout context, which
// splits registry/bare into the loader's, the timeout's and the registry's
// own shares (loader/bare, timeout/loader, registry/loader-timeout).
func BenchmarkThroughput64(b *testing.B) { throughput64(b, "echo", benchArgs) }

// BenchmarkThroughput64Blob is BenchmarkThroughput64 with a 64 KiB result
// (the harness's blob): the bytes the call carries, not the call, dominate.
func BenchmarkThroughput64Blob(b *testing.B) { throughput64(b, "big", benchBlobArgs) }

func throughput64(b *testing.B, tool string, args []byte) {
	reg, l, stopReg := benchRegistry(b)
	defer stopReg()
	rpc, stopBare := bareClient(b)
	defer stopBare()
	inst := activeInstance(l, "svc")
	req := &skillpb.InvokeRequest{Tool: tool, Arguments: args}
	paths := []struct {
		name string
		call func() error
	}{
		{"registry", func() error { _, err := reg.Invoke(context.Background(), "svc."+tool, args); return err }},
		{"bare", func() error { _, err := rpc.Invoke(context.Background(), req); return err }},
		{"bare-deadline", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := rpc.Invoke(ctx, req)
			return err
		}}, {"bare-timer", func() error {
			ctx, cancel := context.WithCancel(context.Background())
			t := time.AfterFunc(30*time.Second, cancel)
			defer t.Stop()
			defer cancel()
			_, err := rpc.Invoke(ctx, req)
			return err
		}},
		// The loader's side alone, without and with the registry's timeout
		// context: registry/loader-timeout is then the registry's own share.
		{"loader", func() error { _, err := inst.Invoke(context.Background(), tool, args, 64<<20); return err }},
		{"loader-timeout", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := inst.Invoke(ctx, tool, args, 64<<20)
			return err
		}},
	}
	const callers, window = 64, 300 * time.Millisecond
	rates := make([][]float64, len(paths))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for round := 0; round < 5; round++ {
			for k := range paths {
				p := paths[(k+round)%len(paths)]
				var n atomic.Int64
				deadline := time.Now().Add(window)
				var wg sync.WaitGroup
				for c := 0; c < callers; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(deadline) {
							if err := p.call(); err != nil {
								b.Error(err)
								return
							}
							n.Add(1)
						}
					}()
				}
				wg.Wait()
				idx := (k + round) % len(paths)
				rates[idx] = append(rates[idx], float64(n.Load())/window.Seconds())
			}
		}
	}
	b.StopTimer()
	med := make([]float64, len(paths))
	for k, r := range rates {
		sort.Float64s(r)
		med[k] = r[len(r)/2]
		b.ReportMetric(med[k], paths[k].name+"-calls/s")
	}
	b.ReportMetric(med[0]/med[1], "registry/bare")
	b.ReportMetric(med[2]/med[1], "deadline/bare")
	b.ReportMetric(med[3]/med[1], "timer/bare")
	b.ReportMetric(med[4]/med[1], "loader/bare")
	b.ReportMetric(med[5]/med[4], "timeout/loader")
	b.ReportMetric(med[0]/med[5], "registry/loader-timeout")
}
