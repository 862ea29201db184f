package textindex

import (
	"fmt"
	"os"
	"testing"
)

// TestTune re-runs the measurements behind TUNING.md: ablations of the
// shipped scoring, then a coordinate-ascent sweep of field weights, b and
// k1 on the even-numbered BFCL queries, checked on the odd-numbered ones.
// It is slow and prints, so it runs only with TEXTINDEX_TUNE=1.
func TestTune(t *testing.T) {
	if os.Getenv("TEXTINDEX_TUNE") == "" {
		t.Skip("set TEXTINDEX_TUNE=1")
	}
	docs, queries := loadBFCL(t)
	ix := New(docs)
	ks := []int{1, 3, 5, 10}
	show := func(name string, r EvalResult) {
		t.Logf("%-34s R@1=%.3f R@3=%.3f R@5=%.3f R@10=%.3f", name, r.Recall[0], r.Recall[1], r.Recall[2], r.Recall[3])
	}
	var train, test []EvalQuery
	for i, q := range queries {
		if i%2 == 0 {
			train = append(train, q)
		} else {
			test = append(test, q)
		}
	}
	defer func() { cfg = defaultScoring }()

	show("shipped, all queries", Evaluate(ix, queries, ks))
	show("shipped, even half", Evaluate(ix, train, ks))
	show("shipped, odd half", Evaluate(ix, test, ks))
	cfg.pairs = false
	show("- name pairs", Evaluate(ix, queries, ks))
	cfg = defaultScoring
	cfg.cover = 0
	show("- name cover boost", Evaluate(ix, queries, ks))
	cfg = defaultScoring
	cfg.weight = [numFields]float64{1, 1, 1, 1, 1, 1, 1}
	cfg.b = [numFields]float64{0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75}
	cfg.k1 = 1.2
	show("untuned weights/b/k1, all", Evaluate(ix, queries, ks))
	show("untuned weights/b/k1, odd half", Evaluate(ix, test, ks))

	eval := func() EvalResult { return Evaluate(ix, train, ks) }
	obj := func(r EvalResult) float64 { return r.Recall[0] + r.Recall[2] }
	names := []string{"name", "desc", "tags", "skill", "pname", "pdesc", "pair"}
	sweep := func(label string, p *float64, values []float64) {
		best, bestV := obj(eval()), *p
		for _, v := range values {
			*p = v
			if o := obj(eval()); o > best+1e-9 {
				best, bestV = o, v
			}
		}
		*p = bestV
		show(fmt.Sprintf("train %s=%v", label, bestV), eval())
	}
	for range 2 {
		for f := range numFields {
			sweep("w["+names[f]+"]", &cfg.weight[f], []float64{0, 0.25, 0.5, 1, 1.5, 2, 3, 4, 6})
		}
		for f := range numFields {
			sweep("b["+names[f]+"]", &cfg.b[f], []float64{0, 0.25, 0.5, 0.75, 0.9, 1})
		}
		sweep("k1", &cfg.k1, []float64{0.5, 0.8, 1.2, 1.6, 2, 3})
	}
	show("swept on even, odd half", Evaluate(ix, test, ks))
	t.Logf("%+v", cfg)
}
