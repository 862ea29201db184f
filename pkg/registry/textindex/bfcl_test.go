package textindex

import (
	"os"
	"path/filepath"
	"testing"
)

// bfclDir is the benchmark data beside the project; it is read in place,
// never copied into the repository.
const bfclDir = "../../../../shared/data/bfcl"

func loadBFCL(tb testing.TB) ([]Doc, []EvalQuery) {
	tb.Helper()
	cat, qs := filepath.Join(bfclDir, "catalog.jsonl"), filepath.Join(bfclDir, "queries.jsonl")
	if _, err := os.Stat(cat); err != nil {
		tb.Skipf("BFCL data absent (%v)", err)
	}
	docs, queries, err := LoadBFCL(cat, qs)
	if err != nil {
		tb.Fatal(err)
	}
	return docs, queries
}

func TestBFCLRecall(t *testing.T) {
	docs, queries := loadBFCL(t)
	ix := New(docs)
	res := Evaluate(ix, queries, []int{1, 3, 5, 10})
	t.Log(res)
	if res.RecallAt(1) < 0.66 || res.RecallAt(5) < 0.89 {
		t.Errorf("recall below target (R@1 >= 0.66, R@5 >= 0.89): %v", res)
	}
}
