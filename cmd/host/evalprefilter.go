package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/textindex"
)

func runEvalPrefilter(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval-prefilter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	catalog := fs.String("catalog", "../shared/data/bfcl/catalog.jsonl", "tool catalog (JSONL: name, description, tags, parameters)")
	queries := fs.String("queries", "../shared/data/bfcl/queries.jsonl", "queries (JSONL: id, query, gold)")
	minR5 := fs.Float64("min-recall5", 0, "exit 1 if recall@5 is below this")
	minR1 := fs.Float64("min-recall1", 0, "exit 1 if recall@1 is below this")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	rep, err := evalPrefilter(*catalog, *queries)
	if err != nil {
		fmt.Fprintf(stderr, "host eval-prefilter: %v\n", err)
		return exitFailure
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintln(stdout, string(b))
	code := exitOK
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"recall@5", rep.Recall5, *minR5}, {"recall@1", rep.Recall1, *minR1}} {
		if c.got < c.want {
			fmt.Fprintf(stderr, "host eval-prefilter: %s %.3f is below %.3f\n", c.name, c.got, c.want)
			code = exitFailure
		}
	}
	return code
}

type evalReport struct {
	Catalog  int     `json:"catalog"`
	Queries  int     `json:"queries"`
	Recall1  float64 `json:"recall@1"`
	Recall3  float64 `json:"recall@3"`
	Recall5  float64 `json:"recall@5"`
	Recall10 float64 `json:"recall@10"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	// Even and Odd are the queries at even and odd positions of the file
	// (0-based): a ranking change tuned on the data should help both.
	Even halfReport `json:"even"`
	Odd  halfReport `json:"odd"`
}

// halfReport is the recall of half of the queries.
type halfReport struct {
	Queries int     `json:"queries"`
	Recall1 float64 `json:"recall@1"`
	Recall5 float64 `json:"recall@5"`
}

// noBackend serves catalog tools that exist to be ranked, never called.
type noBackend struct{}

func (noBackend) Acquire() bool { return false }
func (noBackend) Release()      {}
func (noBackend) Invoke(context.Context, string, []byte, int64) ([]byte, error) {
	return nil, registry.Errorf(registry.CodeSkillUnavailable, "catalog tools cannot be called")
}

// evalPrefilter loads the catalog into a real registry, one skill per tag
// (the same index, scorer and search path as the daemon), and ranks every
// query on its text alone.
func evalPrefilter(catalogPath, queriesPath string) (evalReport, error) {
	docs, err := textindex.ReadCatalog(catalogPath)
	if err != nil {
		return evalReport{}, err
	}
	qs, err := textindex.ReadQueries(queriesPath)
	if err != nil {
		return evalReport{}, err
	}
	// Catalog names are not skillhost names (BFCL has capitals and dots):
	// map each to a valid skill.tool and keep the way back.
	bySkill := map[string][]registry.ToolSpec{}
	qualified := map[string]string{} // catalog name -> skill.tool
	for _, d := range docs {
		skill := toName(textindex.CatalogSkill(d), 20)
		if skill == "" {
			skill = "bfcl"
		}
		tool := toName(d.Name, 38)
		for i := 2; ; i++ { // names that collide after mapping get a suffix
			if _, dup := qualified[registry.Qualified(skill, tool)]; !dup {
				break
			}
			tool = fmt.Sprintf("%s_%d", toName(d.Name, 38), i)
		}
		qualified[d.Name] = registry.Qualified(skill, tool)
		qualified[registry.Qualified(skill, tool)] = d.Name
		bySkill[skill] = append(bySkill[skill], registry.ToolSpec{
			Name: tool, Description: d.Description, Tags: d.Tags, InputSchema: d.Parameters,
		})
	}
	reg := registry.New(registry.Config{})
	for skill, tools := range bySkill {
		if _, err := reg.Put(registry.SkillSpec{Name: skill, Version: "1.0.0", Tools: tools, Backend: noBackend{}}); err != nil {
			return evalReport{}, fmt.Errorf("catalog skill %s: %w", skill, err)
		}
	}
	snap := reg.Snapshot()
	ranks := make([]int, 0, len(qs)) // of the first gold tool in the first 10 hits; -1 for none
	durs := make([]time.Duration, 0, len(qs))
	for _, q := range qs {
		start := time.Now()
		hits := snap.Search(registry.Query{Text: q.Text, Limit: 10})
		durs = append(durs, time.Since(start))
		rank := -1
		for i, h := range hits {
			for _, g := range q.Gold {
				if qualified[g] == h.Tool.Name {
					rank = i
				}
			}
			if rank >= 0 {
				break
			}
		}
		ranks = append(ranks, rank)
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	pct := func(p float64) float64 {
		if len(durs) == 0 {
			return 0
		}
		return float64(durs[int(p*float64(len(durs)-1))]) / 1e6
	}
	// recall is the share of the queries at positions i%step == from whose
	// gold tool is among the first k hits.
	recall := func(k, from, step int) (float64, int) {
		hit, n := 0, 0
		for i := from; i < len(ranks); i += step {
			n++
			if ranks[i] >= 0 && ranks[i] < k {
				hit++
			}
		}
		return round3(float64(hit) / float64(max(n, 1))), n
	}
	half := func(from int) halfReport {
		r1, n := recall(1, from, 2)
		r5, _ := recall(5, from, 2)
		return halfReport{Queries: n, Recall1: r1, Recall5: r5}
	}
	at := func(k int) float64 { r, _ := recall(k, 0, 1); return r }
	return evalReport{
		Catalog: len(docs), Queries: len(qs),
		Recall1: at(1), Recall3: at(3), Recall5: at(5), Recall10: at(10),
		P50MS: round3(pct(0.50)), P99MS: round3(pct(0.99)),
		Even: half(0), Odd: half(1),
	}, nil
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

// toName maps a catalog identifier to the skillhost name rule: camelCase
// words split with "_", everything lowercased, other characters dropped,
// cut to maxLen so that skill__tool fits OpenAI's 64 characters.
func toName(s string, maxLen int) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	parts := strings.FieldsFunc(b.String(), func(r rune) bool { return r == '_' || r == '-' })
	out := strings.Join(parts, "_")
	if out != "" && (out[0] >= '0' && out[0] <= '9') {
		out = "n" + out
	}
	if len(out) > maxLen {
		out = strings.TrimRight(out[:maxLen], "_")
	}
	return out
}
