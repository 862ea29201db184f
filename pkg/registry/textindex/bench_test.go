package textindex

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// replicate returns the BFCL catalog copied until it holds at least n docs,
// each copy under renamed keys and skills, as a stand-in for a big registry.
func replicate(docs []Doc, n int) []Doc {
	out := make([]Doc, 0, n+len(docs))
	for r := 0; len(out) < n; r++ {
		for _, d := range docs {
			d.Key = fmt.Sprintf("r%d.%s", r, d.Key)
			d.Skill = fmt.Sprintf("r%d.%s", r, d.Skill)
			out = append(out, d)
		}
	}
	return out
}

// BenchmarkSearch10k runs the BFCL queries, one per iteration, over the
// catalog replicated to 10,000+ docs, and reports per-query p50/p99.
func BenchmarkSearch10k(b *testing.B) {
	docs, queries := loadBFCL(b)
	ix := New(replicate(docs, 10_000))
	lat := make([]time.Duration, 0, 4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := Query{Text: queries[i%len(queries)].Text}
		start := time.Now()
		ix.Search(q)
		lat = append(lat, time.Since(start))
		i++
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 0.50).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(ix.Len()), "docs")
}

// BenchmarkReplace10k replaces one skill of 20 tools in a 10,000+ doc index.
func BenchmarkReplace10k(b *testing.B) {
	docs, _ := loadBFCL(b)
	all := replicate(docs, 10_000)
	skill := make([]Doc, 20)
	for i := range skill {
		d := docs[(i*37)%len(docs)]
		d.Key = fmt.Sprintf("target.%s", d.Key)
		d.Skill = "target"
		skill[i] = d
	}
	ix := New(append(all, skill...))
	b.ReportAllocs()
	for b.Loop() {
		ix.Replace("target", skill)
	}
	b.ReportMetric(float64(ix.Len()), "docs")
}

// BenchmarkNew10k builds a 10,000+ doc index from scratch.
func BenchmarkNew10k(b *testing.B) {
	docs, _ := loadBFCL(b)
	all := replicate(docs, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		New(all)
	}
}
