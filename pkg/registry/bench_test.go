package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	fastjson "github.com/segmentio/encoding/json"
)

// BenchmarkInvokeOverhead is the registry's own cost per call (lookup,
// validation, limits, lease, result checks) around a backend that answers
// at once.
func BenchmarkInvokeOverhead(b *testing.B) {
	for _, c := range []struct{ name, output string }{
		{"no-output-schema", ""},
		// The schema the SDK writes for the test skill's echo result.
		{"output-schema", `{"type":"object","properties":{"version":{"type":"string"},"msg":{"type":"string"},"pid":{"type":"integer"}},"required":["version","msg","pid"],"additionalProperties":false}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := New(Config{})
			sp := spec("calc", "1.0.0", &memBackend{fn: func(context.Context, string, []byte) ([]byte, error) {
				return []byte(`{"version":"1.0.0","msg":"hello","pid":1}`), nil
			}}, "add")
			sp.Tools[0].OutputSchema = json.RawMessage(c.output)
			if _, err := r.Put(sp); err != nil {
				b.Fatal(err)
			}
			args := []byte(`{"n":1,"s":"hello"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := r.Invoke(ctx, "calc.add", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLookupUnderWrites measures lock-free lookups while a writer keeps
// publishing new snapshots.
func BenchmarkLookupUnderWrites(b *testing.B) {
	r := New(Config{})
	for i := 0; i < 50; i++ {
		r.Put(spec(fmt.Sprintf("s%d", i), "1.0.0", &memBackend{}, "a", "b", "c"))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.Put(spec(fmt.Sprintf("s%d", i%50), "1.0.1", &memBackend{}, "a", "b", "c"))
		}
	}()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok := r.Snapshot().Tool(fmt.Sprintf("s%d.b", i%50)); !ok {
				b.Error("lookup failed")
			}
			i++
		}
	})
	b.StopTimer()
	close(stop)
	wg.Wait()
}

// BenchmarkResultCheck64k is the check of a 64 KiB result ({"data": "..."},
// as the benchmark skill's blob tool answers) against its output schema,
// next to the JSON validity check a tool without one gets.
func BenchmarkResultCheck64k(b *testing.B) {
	res := []byte(`{"data":"` + strings.Repeat("x", 64<<10) + `"}`)
	f := compileFast(json.RawMessage(`{"type":"object","properties":{"data":{"type":"string"}},"required":["data"],"additionalProperties":false}`))
	b.Run("output-schema", func(b *testing.B) {
		b.SetBytes(int64(len(res)))
		for i := 0; i < b.N; i++ {
			if !f.validBytes(res) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json-valid-only", func(b *testing.B) {
		b.SetBytes(int64(len(res)))
		for i := 0; i < b.N; i++ {
			if !fastjson.Valid(res) {
				b.Fatal("invalid")
			}
		}
	})
}
