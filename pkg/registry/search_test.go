package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// searchFixture registers three skills whose tools differ in tags,
// annotations and text, so each filter of Query excludes something.
func searchFixture(t *testing.T) *Registry {
	t.Helper()
	r := New(Config{})
	put := func(skill, desc string, tools ...ToolSpec) {
		t.Helper()
		for i := range tools {
			tools[i].InputSchema = json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}}}`)
		}
		if _, err := r.Put(SkillSpec{Name: skill, Version: "1.0.0", Description: desc, Backend: &memBackend{version: "1.0.0"}, Tools: tools}); err != nil {
			t.Fatal(err)
		}
	}
	put("policy", "Workplace policy documents",
		ToolSpec{Name: "search_policies", Description: "Search the travel and expense policy (差旅报销制度) for clauses.", Tags: []string{"policy", "制度", "hr"}, Annotations: Annotations{ReadOnly: true}},
		ToolSpec{Name: "update_policy", Description: "Change a policy clause.", Tags: []string{"policy", "admin"}})
	put("calc", "Arithmetic",
		ToolSpec{Name: "evaluate", Description: "Evaluate an arithmetic expression such as 2*(3+4).", Tags: []string{"math"}, Annotations: Annotations{ReadOnly: true}},
		ToolSpec{Name: "convert_units", Description: "Convert miles to kilometres and other units.", Tags: []string{"math", "units"}, Annotations: Annotations{ReadOnly: true}})
	put("tickets", "Help desk tickets",
		ToolSpec{Name: "open_ticket", Description: "Open a help desk ticket about a policy question.", Tags: []string{"hr", "admin"}})
	return r
}

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Tool.Name)
	}
	return out
}

func TestSearchFilters(t *testing.T) {
	r := searchFixture(t)
	for _, tc := range []struct {
		name string
		q    Query
		want []string // in order
	}{
		{"text ranks the best match first", Query{Text: "convert 5 miles to km"}, nil},
		{"chinese text", Query{Text: "查询报销制度", Limit: 1}, []string{"policy.search_policies"}},
		{"tags match any, more matched tags first", Query{Filter: Filter{Tags: []string{"hr", "admin"}}},
			[]string{"tickets.open_ticket", "policy.search_policies", "policy.update_policy"}},
		{"tags match all", Query{Filter: Filter{Tags: []string{"hr", "admin"}, MatchAll: true}}, []string{"tickets.open_ticket"}},
		{"tags are case-insensitive", Query{Filter: Filter{Tags: []string{"MATH"}, MatchAll: true}}, []string{"calc.convert_units", "calc.evaluate"}},
		{"read-only only", Query{Text: "policy", Filter: Filter{ReadOnly: true}}, []string{"policy.search_policies"}},
		{"skills filter", Query{Text: "policy", Filter: Filter{Skills: []string{"tickets"}}}, []string{"tickets.open_ticket"}},
		{"text within tags", Query{Text: "policy clause", Filter: Filter{Tags: []string{"admin"}}}, []string{"policy.update_policy", "tickets.open_ticket"}},
		{"limit", Query{Filter: Filter{Tags: []string{"math", "policy", "hr"}}, Limit: 2}, nil},
		{"no match", Query{Text: "zebra"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(r.Snapshot().Search(tc.q))
			switch tc.name {
			case "text ranks the best match first":
				if len(got) == 0 || got[0] != "calc.convert_units" {
					t.Fatalf("got %v", got)
				}
			case "limit":
				if len(got) != 2 {
					t.Fatalf("got %v, want 2 hits", got)
				}
			default:
				if !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSearchTagBoostReorders(t *testing.T) {
	// Two tools alike in text: under match-any, the one that carries more of
	// the requested tags comes first; with one tag they tie and go by name.
	r := New(Config{})
	desc := "Look up an order by its number."
	r.Put(SkillSpec{Name: "shop", Version: "1", Backend: &memBackend{version: "1"}, Tools: []ToolSpec{
		{Name: "alpha", Description: desc, Tags: []string{"orders"}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "beta", Description: desc, Tags: []string{"orders", "support"}, InputSchema: json.RawMessage(`{"type":"object"}`)},
	}})
	if got := names(r.Snapshot().Search(Query{Text: "look up order", Filter: Filter{Tags: []string{"orders"}}})); !slices.Equal(got, []string{"shop.alpha", "shop.beta"}) {
		t.Fatalf("one tag: %v", got)
	}
	hits := r.Snapshot().Search(Query{Text: "look up order", Filter: Filter{Tags: []string{"orders", "support"}}})
	if got := names(hits); !slices.Equal(got, []string{"shop.beta", "shop.alpha"}) {
		t.Fatalf("two tags: %v", got)
	}
	if hits[0].Score <= hits[1].Score || hits[1].Score <= 0 {
		t.Fatalf("scores %v, %v", hits[0].Score, hits[1].Score)
	}
}

func TestSearchDefaultLimitAndUnavailable(t *testing.T) {
	r := New(Config{})
	b := &memBackend{version: "1"}
	var tools []string
	for i := range 8 {
		tools = append(tools, fmt.Sprintf("lookup%d", i))
	}
	r.Put(spec("many", "1", b, tools...))
	r.Put(spec("other", "1", &memBackend{version: "1"}, "lookup"))
	if got := r.Snapshot().Search(Query{Text: "does lookup"}); len(got) != DefaultLimit {
		t.Fatalf("default limit: %d hits", len(got))
	}
	r.SetAvailable("many", b, false, "crashed")
	got := names(r.Snapshot().Search(Query{Text: "does lookup", Limit: 20}))
	if !slices.Equal(got, []string{"other.lookup"}) {
		t.Fatalf("an unavailable skill's tools were offered: %v", got)
	}
	if got := names(r.Snapshot().Search(Query{Filter: Filter{Tags: []string{"t-many"}}})); len(got) != 0 {
		t.Fatalf("an unavailable skill's tools were offered by tag: %v", got)
	}
}

func TestSearchDuringSwaps(t *testing.T) {
	r := searchFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				hits := r.Snapshot().Search(Query{Text: "arithmetic expression", Limit: 3})
				if len(hits) == 0 || hits[0].Tool.Skill != "calc" {
					t.Errorf("during swaps: %v", names(hits))
					return
				}
			}
		})
	}
	for v := range 200 {
		ver := fmt.Sprintf("1.0.%d", v)
		r.Put(SkillSpec{Name: "tickets", Version: ver, Description: "Help desk tickets", Backend: &memBackend{version: ver},
			Tools: []ToolSpec{{Name: fmt.Sprintf("open_ticket%d", v), Description: "Open a ticket.", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
	}
	cancel()
	wg.Wait()
}
