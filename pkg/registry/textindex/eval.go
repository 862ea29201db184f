package textindex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// EvalQuery is one labelled request: any of Gold (document keys) answers it.
type EvalQuery struct {
	ID   string
	Text string
	Gold []string
}

// EvalResult is the outcome of Evaluate.
type EvalResult struct {
	Queries int
	Ks      []int
	Recall  []float64     // Recall[i]: share of queries with a gold key in the first Ks[i] hits
	P50     time.Duration // per-query Search latency
	P99     time.Duration
	Misses  []string // IDs of queries with no gold key in the first max(Ks) hits
}

// String formats r on one line, e.g. "n=1150 R@1=0.650 R@5=0.870 p50=80µs p99=400µs".
func (r EvalResult) String() string {
	s := fmt.Sprintf("n=%d", r.Queries)
	for i, k := range r.Ks {
		s += fmt.Sprintf(" R@%d=%.3f", k, r.Recall[i])
	}
	return s + fmt.Sprintf(" p50=%v p99=%v", r.P50, r.P99)
}

// Evaluate runs every query against ix, ranking as deep as the largest k,
// and reports recall at each k and the latency distribution.
func Evaluate(ix *Index, queries []EvalQuery, ks []int) EvalResult {
	res := EvalResult{Queries: len(queries), Ks: slices.Clone(ks), Recall: make([]float64, len(ks))}
	if len(queries) == 0 || len(ks) == 0 {
		return res
	}
	maxK := slices.Max(ks)
	lat := make([]time.Duration, 0, len(queries))
	for _, q := range queries {
		start := time.Now()
		hits := ix.Search(Query{Text: q.Text, Limit: maxK})
		lat = append(lat, time.Since(start))
		rank := -1
		for i, h := range hits {
			if slices.Contains(q.Gold, h.Key) {
				rank = i
				break
			}
		}
		for i, k := range ks {
			if rank >= 0 && rank < k {
				res.Recall[i]++
			}
		}
		if rank < 0 {
			res.Misses = append(res.Misses, q.ID)
		}
	}
	for i := range res.Recall {
		res.Recall[i] /= float64(len(queries))
	}
	res.P50, res.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return res
}

// percentile returns the q-quantile of d (nearest rank); d is sorted in place.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

// CatalogTool is one line of the BFCL catalog.
type CatalogTool struct {
	Name         string          `json:"name"`
	OriginalName string          `json:"original_name"`
	Description  string          `json:"description"`
	Tags         []string        `json:"tags"`
	Parameters   json.RawMessage `json:"parameters"`
}

// bfclQuery is one line of the BFCL queries file.
type bfclQuery struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Gold  []string `json:"gold"`
}

// ReadCatalog reads a BFCL-style tool catalog (JSON Lines).
func ReadCatalog(path string) ([]CatalogTool, error) {
	var tools []CatalogTool
	err := readJSONL(path, func(line []byte) error {
		var t CatalogTool
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		tools = append(tools, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load bfcl catalog: %w", err)
	}
	return tools, nil
}

// ReadQueries reads labelled queries (JSON Lines: id, query, gold).
func ReadQueries(path string) ([]EvalQuery, error) {
	var qs []EvalQuery
	err := readJSONL(path, func(line []byte) error {
		var q bfclQuery
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if len(q.Gold) == 0 {
			return fmt.Errorf("query %q has no gold tools", q.ID)
		}
		qs = append(qs, EvalQuery{ID: q.ID, Text: q.Query, Gold: q.Gold})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load bfcl queries: %w", err)
	}
	return qs, nil
}

// LoadBFCL reads the tool-retrieval benchmark derived from the Berkeley
// Function Calling Leaderboard: a catalog of tools and labelled queries,
// both JSON Lines. Each tool becomes a Doc keyed by its catalog name, in the
// skill named by its first tag ("bfcl" when it has none), with no skill
// description.
func LoadBFCL(catalogPath, queriesPath string) ([]Doc, []EvalQuery, error) {
	tools, err := ReadCatalog(catalogPath)
	if err != nil {
		return nil, nil, err
	}
	docs := make([]Doc, 0, len(tools))
	for _, t := range tools {
		docs = append(docs, Doc{
			Key: t.Name, Skill: CatalogSkill(t), Name: t.Name, Description: t.Description,
			Tags: t.Tags, Params: ParamsFromSchema(t.Parameters),
		})
	}
	qs, err := ReadQueries(queriesPath)
	if err != nil {
		return nil, nil, err
	}
	return docs, qs, nil
}

// CatalogSkill is the skill a catalog tool is filed under: its first tag,
// or "bfcl".
func CatalogSkill(t CatalogTool) string {
	if len(t.Tags) > 0 && t.Tags[0] != "" {
		return t.Tags[0]
	}
	return "bfcl"
}

// readJSONL calls fn with each non-empty line of the file at path.
func readJSONL(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// RecallAt returns the recall at k, or 0 if k was not evaluated.
func (r EvalResult) RecallAt(k int) float64 {
	if i := slices.Index(r.Ks, k); i >= 0 {
		return r.Recall[i]
	}
	return 0
}
