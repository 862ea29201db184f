package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// registryResult holds the registry's own benchmarks at 10,000+ tools,
// from pkg/registry/search_bench_test.go (which reads the BFCL catalog in
// place and replicates it).
type registryResult struct {
	Tools         int       `json:"tools"`
	SearchP50us   []float64 `json:"search_p50_us"` // one per -count
	SearchP99us   []float64 `json:"search_p99_us"`
	BytesPerTool  float64   `json:"bytes_per_tool"`
	SchemaPerTool float64   `json:"schema_bytes_per_tool"`
	Skipped       string    `json:"skipped,omitempty"`
}

// registryBench builds the registry's test binary once and runs its
// BenchmarkSearch10k (iters queries per run, count runs) and
// BenchmarkMemoryPerTool10k.
func registryBench(ctx context.Context, repo, out string, iters, count int) (registryResult, error) {
	var r registryResult
	bin := filepath.Join(out, "registry.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./pkg/registry")
	build.Dir = repo
	if b, err := build.CombinedOutput(); err != nil {
		return r, fmt.Errorf("go test -c ./pkg/registry: %v\n%s", err, b)
	}
	run := func(bench, benchtime string, count int) ([]map[string]float64, error) {
		cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", "^"+bench+"$",
			"-test.benchtime", benchtime, "-test.count", strconv.Itoa(count))
		cmd.Dir = filepath.Join(repo, "pkg", "registry") // the benchmark finds the BFCL data relative to it
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %v\n%s", bench, err, b)
		}
		if strings.Contains(string(b), "--- SKIP") {
			return nil, errSkipped(strings.TrimSpace(string(b)))
		}
		var rows []map[string]float64
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, bench) {
				rows = append(rows, benchMetrics(line))
			}
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("%s: no result in\n%s", bench, b)
		}
		return rows, nil
	}
	rows, err := run("BenchmarkSearch10k", strconv.Itoa(iters)+"x", count)
	if err != nil {
		if s, ok := err.(errSkipped); ok {
			r.Skipped = string(s)
			return r, nil
		}
		return r, err
	}
	for _, m := range rows {
		r.SearchP50us = append(r.SearchP50us, m["p50-µs"])
		r.SearchP99us = append(r.SearchP99us, m["p99-µs"])
		r.Tools = int(m["tools"])
	}
	rows, err = run("BenchmarkMemoryPerTool10k", "1x", 1)
	if err != nil {
		return r, err
	}
	r.BytesPerTool, r.SchemaPerTool = rows[0]["B/tool"], rows[0]["schema-B/tool"]
	return r, nil
}

type errSkipped string

func (e errSkipped) Error() string { return "skipped: " + string(e) }

// benchMetrics parses the "value unit" pairs of one benchmark line.
func benchMetrics(line string) map[string]float64 {
	f := strings.Fields(line)
	m := map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		if v, err := strconv.ParseFloat(f[i], 64); err == nil {
			m[f[i+1]] = v
		}
	}
	return m
}
