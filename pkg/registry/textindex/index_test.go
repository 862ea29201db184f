package textindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func testDocs() []Doc {
	return []Doc{
		{Key: "calc.convert_units", Skill: "calc", Name: "convert_units",
			Description: "Convert a quantity between units of measurement, e.g. miles to kilometers.",
			Tags:        []string{"math"}, SkillDescription: "Calculators and converters",
			Params: []Param{{"value", "The quantity to convert"}, {"from_unit", "Unit to convert from"}, {"to_unit", "Unit to convert to"}}},
		{Key: "calc.add", Skill: "calc", Name: "add", Description: "Add two numbers.",
			Tags: []string{"math"}, SkillDescription: "Calculators and converters",
			Params: []Param{{"a", "First number"}, {"b", "Second number"}}},
		{Key: "weather.get_forecast", Skill: "weather", Name: "getForecast",
			Description: "Get the weather forecast for a city for the next days.",
			Tags:        []string{"weather"}, Params: []Param{{"city", "City name"}, {"days", "Number of days"}}},
		{Key: "weather.current", Skill: "weather", Name: "current_conditions",
			Description: "Current temperature and conditions in a city.",
			Tags:        []string{"weather"}, Params: []Param{{"city", "City name"}}},
		{Key: "hr.policy", Skill: "hr", Name: "lookup_policy", Description: "差旅报销制度说明与查询",
			Tags: []string{"制度"}},
		{Key: "hr.expense", Skill: "hr", Name: "submit_expense", Description: "提交费用申请",
			Tags: []string{"报销"}},
	}
}

func keys(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Key
	}
	return out
}

func TestSearchOrder(t *testing.T) {
	ix := New(testDocs())
	tests := []struct {
		query string
		first string
	}{
		{"convert 5 miles to kilometers", "calc.convert_units"},
		{"what will the weather be in Paris over the next 3 days", "weather.get_forecast"},
		{"current temperature in Oslo", "weather.current"},
		{"add two numbers", "calc.add"},
		{"查询报销制度", "hr.policy"},
		{"我要报销", "hr.expense"},
		{"差旅 policy", "hr.policy"},
	}
	for _, tt := range tests {
		hits := ix.Search(Query{Text: tt.query})
		if len(hits) == 0 || hits[0].Key != tt.first {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, hits, tt.first)
		}
		for i := 1; i < len(hits); i++ {
			if better(hits[i], hits[i-1]) {
				t.Errorf("Search(%q) not sorted: %v", tt.query, hits)
			}
		}
	}
}

func TestSearchChineseMatchesTagAndDescription(t *testing.T) {
	ix := New(testDocs())
	got := keys(ix.Search(Query{Text: "查询报销制度"}))
	for _, want := range []string{"hr.policy", "hr.expense"} {
		if !slices.Contains(got, want) {
			t.Errorf("查询报销制度 → %v, want %s among hits", got, want)
		}
	}
}

func TestSearchLimit(t *testing.T) {
	var docs []Doc
	for i := range 100 {
		docs = append(docs, Doc{Key: fmt.Sprintf("s.t%03d", i), Skill: "s", Name: fmt.Sprintf("tool%d", i),
			Description: "Search the catalog. " + fmt.Sprint(slices.Repeat([]string{"catalog"}, i%7))})
	}
	ix := New(docs)
	for _, tt := range []struct{ limit, want int }{{0, DefaultLimit}, {-1, DefaultLimit}, {1, 1}, {3, 3}, {70, 70}, {1000, 100}} {
		hits := ix.Search(Query{Text: "catalog", Limit: tt.limit})
		if len(hits) != tt.want {
			t.Errorf("Limit %d: %d hits, want %d", tt.limit, len(hits), tt.want)
		}
		if tt.limit > 1 {
			// The small-limit and large-limit paths must agree on the order.
			all := ix.Search(Query{Text: "catalog", Limit: 1000})
			if !slices.Equal(hits, all[:len(hits)]) {
				t.Errorf("Limit %d: %v is not a prefix of the full ranking", tt.limit, keys(hits))
			}
		}
	}
}

func TestSearchTiesByKey(t *testing.T) {
	d := Doc{Skill: "s", Name: "echo", Description: "Echo the text back."}
	var docs []Doc
	for _, k := range []string{"s.c", "s.a", "s.b"} {
		d.Key = k
		docs = append(docs, d)
	}
	got := keys(New(docs).Search(Query{Text: "echo"}))
	if !slices.Equal(got, []string{"s.a", "s.b", "s.c"}) {
		t.Errorf("ties: got %v, want by key", got)
	}
}

func TestSearchAccept(t *testing.T) {
	docs := testDocs()
	for i := range docs {
		docs[i].Ref = "ref:" + docs[i].Key
	}
	ix := New(docs)
	var calls int
	hits := ix.Search(Query{Text: "weather city", Accept: func(h Hit) bool {
		calls++
		if h.Ref != "ref:"+h.Key {
			t.Errorf("Accept got %s with Ref %v", h.Key, h.Ref)
		}
		return h.Key != "weather.get_forecast"
	}})
	if slices.Contains(keys(hits), "weather.get_forecast") {
		t.Errorf("rejected key returned: %v", hits)
	}
	if len(hits) == 0 || hits[0].Key != "weather.current" || hits[0].Ref != "ref:weather.current" {
		t.Errorf("hits = %v, want weather.current (with its Ref) first", hits)
	}
	if calls == 0 {
		t.Error("Accept never called")
	}
	if hits := ix.Search(Query{Text: "weather", Accept: func(Hit) bool { return false }}); len(hits) != 0 {
		t.Errorf("reject-all returned %v", hits)
	}
}

func TestSearchEmpty(t *testing.T) {
	ix := New(testDocs())
	for _, q := range []string{"", "   ", "the of and", "1 2 3", "zzzunknown"} {
		if hits := ix.Search(Query{Text: q}); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want none", q, hits)
		}
	}
	if hits := New(nil).Search(Query{Text: "weather"}); len(hits) != 0 {
		t.Errorf("empty index returned %v", hits)
	}
	var zero Index
	if zero.Len() != 0 || len(zero.Search(Query{Text: "x y"})) != 0 {
		t.Error("zero Index not empty")
	}
	if got := zero.Replace("s", testDocs()[:1]).Len(); got != 1 {
		t.Errorf("zero Index Replace: Len %d, want 1", got)
	}
}

func TestReplace(t *testing.T) {
	docs := testDocs()
	ix := New(docs)
	before := ix.Search(Query{Text: "weather forecast city"})

	nx := ix.Replace("weather", []Doc{{Key: "weather.radar", Name: "radar_map", Description: "Show the rain radar map for a city."}})
	if ix.Len() != 6 || nx.Len() != 5 {
		t.Fatalf("Len: old %d new %d, want 6 and 5", ix.Len(), nx.Len())
	}
	if after := ix.Search(Query{Text: "weather forecast city"}); !slices.Equal(before, after) {
		t.Errorf("old index changed: %v → %v", before, after)
	}
	got := keys(nx.Search(Query{Text: "weather forecast city rain"}))
	if slices.Contains(got, "weather.get_forecast") || !slices.Contains(got, "weather.radar") {
		t.Errorf("new index hits %v: want radar, not the old forecast", got)
	}

	// Removing the skill leaves the other skills searchable.
	rx := nx.Replace("weather", nil)
	if rx.Len() != 4 {
		t.Errorf("after removal Len = %d, want 4", rx.Len())
	}
	if hits := rx.Search(Query{Text: "radar"}); len(hits) != 0 {
		t.Errorf("removed skill still found: %v", hits)
	}
	if hits := rx.Search(Query{Text: "convert miles"}); len(hits) == 0 || hits[0].Key != "calc.convert_units" {
		t.Errorf("untouched skill lost: %v", hits)
	}
	// Removing an absent skill is a no-op.
	if rx.Replace("nope", nil).Len() != 4 {
		t.Error("removing an absent skill changed Len")
	}
}

// TestReplaceMatchesNew checks that any sequence of Replace calls scores
// exactly like an index built from scratch over the same documents: corpus
// statistics are global, not per segment.
func TestReplaceMatchesNew(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"weather", "forecast", "city", "convert", "unit", "miles", "报销", "制度", "search", "file", "user", "getUser", "delete_file"}
	randText := func(n int) string {
		s := ""
		for range n {
			s += words[rng.IntN(len(words))] + " "
		}
		return s
	}
	skills := map[string][]Doc{}
	ix := New(nil)
	for step := range 60 {
		skill := fmt.Sprintf("s%d", rng.IntN(6))
		var docs []Doc
		for i := range rng.IntN(5) {
			docs = append(docs, Doc{Key: fmt.Sprintf("%s.t%d_%d", skill, step, i), Skill: skill,
				Name: randText(2), Description: randText(6), Tags: []string{randText(1)},
				Params: []Param{{Name: randText(1), Description: randText(3)}}})
		}
		var all []Doc
		ix, all = replaceBoth(ix, skills, skill, docs)
		fresh := New(all)
		if ix.Len() != fresh.Len() {
			t.Fatalf("step %d: Len %d, fresh %d", step, ix.Len(), fresh.Len())
		}
		sameHits(t, step, Query{Text: randText(3), Limit: 1000}, ix, fresh)
	}
}

// TestReplaceManyBlocks drives posting lists past several blocks (one
// term in every document) through random replacements, removals and slot
// reuse, and checks them against an index built from scratch, and the
// block invariants that Search and Replace rely on.
func TestReplaceManyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	skills := map[string][]Doc{}
	ix := New(nil)
	for step := range 120 {
		skill := fmt.Sprintf("s%d", rng.IntN(40))
		var docs []Doc
		for i := range rng.IntN(30) {
			docs = append(docs, Doc{Key: fmt.Sprintf("%s.t%d_%d", skill, step, i), Skill: skill,
				Name: fmt.Sprintf("weather tool%d", rng.IntN(50)), Description: "weather forecast " + skill})
		}
		var all []Doc
		ix, all = replaceBoth(ix, skills, skill, docs)
		checkBlocks(t, ix)
		fresh := New(all)
		if got, want := ix.postings("weather").df, int32(len(all)); got != want {
			t.Fatalf("step %d: df(weather) = %d, want %d", step, got, want)
		}
		sameHits(t, step, Query{Text: fmt.Sprintf("weather tool%d forecast", rng.IntN(50)), Limit: 10_000}, ix, fresh)
	}
	if pl := ix.postings("weather"); len(pl.blocks) < 3 {
		t.Fatalf("the test never grew a list past %d blocks", len(pl.blocks))
	}
}

// checkBlocks checks every posting list of ix: blocks non-empty, at most
// twice blockSize, sorted within and across, df their total, every slot live.
func checkBlocks(t *testing.T, ix *Index) {
	t.Helper()
	for _, shard := range ix.terms {
		for term, pl := range shard {
			var n int32
			last := int32(-1)
			for _, b := range pl.blocks {
				if len(b) == 0 || len(b) > 2*blockSize {
					t.Fatalf("term %q: block of %d postings", term, len(b))
				}
				for _, p := range b {
					if p.doc <= last || ix.docs[p.doc] == nil {
						t.Fatalf("term %q: slot %d out of order or free", term, p.doc)
					}
					last = p.doc
				}
				n += int32(len(b))
			}
			if n != pl.df || n == 0 {
				t.Fatalf("term %q: df %d, postings %d", term, pl.df, n)
			}
		}
	}
}

// replaceBoth applies one Replace to ix and to the model skills (skill →
// docs), returning the new index and every document the model now holds.
func replaceBoth(ix *Index, skills map[string][]Doc, skill string, docs []Doc) (*Index, []Doc) {
	if len(docs) == 0 {
		delete(skills, skill)
	} else {
		skills[skill] = docs
	}
	var all []Doc
	for _, d := range skills {
		all = append(all, d...)
	}
	return ix.Replace(skill, docs), all
}

// sameHits fails unless q ranks the same keys with the same scores on ix
// and on fresh.
func sameHits(t *testing.T, step int, q Query, ix, fresh *Index) {
	t.Helper()
	got, want := ix.Search(q), fresh.Search(q)
	if len(got) != len(want) {
		t.Fatalf("step %d %q: %d hits, fresh %d", step, q.Text, len(got), len(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
			t.Fatalf("step %d %q: hit %d = %v, fresh %v", step, q.Text, i, got[i], want[i])
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestConcurrentSearchReplace publishes new indexes the way the registry
// does while readers search; run with -race.
func TestConcurrentSearchReplace(t *testing.T) {
	var cur atomic.Pointer[Index]
	cur.Store(New(testDocs()))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			old := cur.Load()
			want := old.Search(Query{Text: "convert miles"})
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if hits := cur.Load().Search(Query{Text: []string{"weather city", "convert miles", "报销", "radar"}[(i+r)%4]}); len(hits) > DefaultLimit {
					t.Errorf("too many hits: %v", hits)
				}
				// A retained snapshot never changes under its reader.
				if got := old.Search(Query{Text: "convert miles"}); !slices.Equal(got, want) {
					t.Errorf("snapshot changed: %v → %v", want, got)
					return
				}
			}
		})
	}
	for i := range 200 {
		docs := []Doc{{Key: fmt.Sprintf("weather.v%d", i), Name: "radar", Description: fmt.Sprintf("radar city version %d", i)}}
		if i%3 == 0 {
			docs = nil
		}
		cur.Store(cur.Load().Replace("weather", docs))
	}
	close(stop)
	wg.Wait()
}

func TestParamsFromSchema(t *testing.T) {
	schema := `{
		"type": "object",
		"properties": {
			"unit": {"type": "string", "description": "Temperature unit", "enum": ["celsius", "fahrenheit"]},
			"location": {"type": "object", "description": "Where", "properties": {
				"city": {"type": "string", "description": "City name"},
				"geo": {"type": "object", "properties": {"lat": {"type": "number"}}}
			}},
			"items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string", "description": "Stock keeping unit"}}}},
			"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
		}
	}`
	got := ParamsFromSchema([]byte(schema))
	want := []Param{
		{"items", ""},
		{"sku", "Stock keeping unit"},
		{"location", "Where"},
		{"city", "City name"},
		{"geo", ""},
		{"lat", ""},
		{"tags", "a b"},
		{"unit", "Temperature unit celsius fahrenheit"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParamsFromSchema =\n%q\nwant\n%q", got, want)
	}
	for _, bad := range []string{"", "null", "{", `{"properties": 3}`, `[]`} {
		if got := ParamsFromSchema([]byte(bad)); len(got) != 0 {
			t.Errorf("ParamsFromSchema(%q) = %v, want none", bad, got)
		}
	}
}

func TestEvaluate(t *testing.T) {
	ix := New(testDocs())
	res := Evaluate(ix, []EvalQuery{
		{ID: "1", Text: "convert miles to km", Gold: []string{"calc.convert_units"}},
		{ID: "2", Text: "forecast", Gold: []string{"weather.get_forecast"}},
		{ID: "3", Text: "nothing matches this", Gold: []string{"calc.add"}},
		{ID: "4", Text: "city", Gold: []string{"weather.current", "weather.get_forecast"}},
	}, []int{1, 5})
	if res.Queries != 4 || res.Recall[1] != 0.75 || res.Recall[0] < 0.5 {
		t.Errorf("Evaluate = %v", res)
	}
	if !slices.Equal(res.Misses, []string{"3"}) {
		t.Errorf("Misses = %v, want [3]", res.Misses)
	}
	if res.P99 < res.P50 {
		t.Errorf("p99 %v < p50 %v", res.P99, res.P50)
	}
}

func TestSearchAllocs(t *testing.T) {
	ix := New(testDocs())
	ix.Search(Query{Text: "weather city"}) // warm the pool
	allocs := testing.AllocsPerRun(100, func() { ix.Search(Query{Text: "weather forecast for the city"}) })
	if allocs > 20 {
		t.Errorf("Search allocates %v times, want few", allocs)
	}
}
