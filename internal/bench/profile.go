package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"
)

// profileResult is one CPU profile of a hot path.
type profileResult struct {
	Name    string   `json:"name"`
	File    string   `json:"file"`
	Callers int      `json:"callers"`
	Seconds float64  `json:"seconds"`
	Calls   float64  `json:"calls_per_s"`
	Flat    []string `json:"flat_top"` // go tool pprof -top lines
	Ours    []string `json:"ours_cum"` // skillhost functions by cumulative share
}

// profilePath records a CPU profile of this process while callers hammer
// tool through p for d.
func profilePath(ctx context.Context, p *path, tool string, callers int, d time.Duration, file string) (profileResult, error) {
	r := profileResult{Name: p.name + " " + tool, File: file, Callers: callers, Seconds: d.Seconds()}
	f, err := os.Create(file)
	if err != nil {
		return r, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return r, err
	}
	r.Calls, _, _ = throughput(ctx, p.call, tool, callers, d, 50*time.Millisecond)
	pprof.StopCPUProfile()
	r.Flat, r.Ours = summarize(file)
	return r, nil
}

// summarize runs go tool pprof on a profile: the top flat entries, and the
// skillhost functions (pkg/ and sdk/) by cumulative share.
func summarize(file string) (flat, ours []string) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=15", file).Output()
	if err == nil {
		flat = pprofRows(string(out))
	}
	out, err = exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=400", file).Output()
	if err == nil {
		for _, row := range pprofRows(string(out)) {
			if strings.Contains(row, "  pkg/") || strings.Contains(row, "  sdk") {
				ours = append(ours, row)
			}
			if len(ours) == 15 {
				break
			}
		}
	}
	return flat, ours
}

// pprofRows keeps the table rows of go tool pprof -top, compacted to
// "flat% cum% function".
func pprofRows(out string) []string {
	var rows []string
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" {
			inTable = true
			continue
		}
		if !inTable || len(f) < 6 {
			continue
		}
		name := strings.Join(f[5:], " ")
		name = strings.TrimPrefix(name, "github.com/skillhost/skillhost/")
		rows = append(rows, fmt.Sprintf("%6s %6s  %s", f[1], f[4], name))
	}
	return rows
}
