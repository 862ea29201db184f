package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk/skilltest"
)

func searchCall(t *testing.T, c *skilltest.Client, args map[string]any) searchOut {
	t.Helper()
	raw, err := c.Call(context.Background(), "search_policies", args)
	if err != nil {
		t.Fatal(err)
	}
	var out searchOut
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return out
}

func TestSkillDescribe(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "policy" || len(d.Tools) != 2 || d.Tools[0].Name != "search_policies" || d.Tools[1].Name != "get_clause" {
		t.Fatalf("describe = %v", d)
	}
	for _, tool := range d.Tools {
		if !tool.Annotations.ReadOnly {
			t.Errorf("%s is not read-only", tool.Name)
		}
	}
	if !strings.Contains(d.Tools[0].Description, "报销") || !strings.Contains(string(d.Tools[0].InputSchema), `"required":["query"]`) {
		t.Errorf("search_policies = %s / %s", d.Tools[0].Description, d.Tools[0].InputSchema)
	}
}

func TestSkillSearch(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	ctx := context.Background()

	out := searchCall(t, c, map[string]any{"query": "报销标准"})
	if len(out.Results) == 0 || out.Total < len(out.Results) || len(out.Results) > defaultLimit {
		t.Fatalf("报销标准: %+v", out)
	}
	top := out.Results[0]
	if top.Document != "travel-expense" || top.Title != "差旅报销制度" || !strings.Contains(top.Heading, "报销标准") ||
		top.Source != "corpus/travel-expense.md" || top.Score <= 0 || !strings.HasPrefix(top.Citation, "《差旅报销制度》第") ||
		!strings.Contains(top.Text, "元") {
		t.Errorf("报销标准 top = %+v", top)
	}

	out = searchCall(t, c, map[string]any{"query": "remote work equipment", "limit": 2})
	if len(out.Results) != 2 || out.Results[0].Document != "remote-work" || out.Results[0].Clause != "4" ||
		out.Results[0].Heading != "Equipment" || out.Results[0].Citation != "Remote Work Policy §4" {
		t.Errorf("remote work equipment = %+v", out)
	}

	out = searchCall(t, c, map[string]any{"query": "zebra"})
	if out.Results == nil || len(out.Results) != 0 {
		t.Errorf("no-match results must be an empty array: %+v", out)
	}

	raw, err := c.Call(ctx, "get_clause", map[string]any{"document": "travel-expense", "clause": "第五条"})
	var cl clauseOut
	if err != nil || json.Unmarshal(raw, &cl) != nil || cl.Clause != "5" || !strings.Contains(cl.Text, "一线城市") || strings.Contains(string(raw), `"score"`) {
		t.Errorf("get_clause = %s, %v", raw, err)
	}

	_, err = c.Call(ctx, "get_clause", map[string]any{"document": "leave", "clause": "42"})
	if te, ok := err.(*skilltest.ToolError); !ok || te.Code != "unknown_clause" {
		t.Errorf("get_clause leave 42 = %v", err)
	}
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the skill binary")
	}
	bin := skilltest.Build(t, ".")
	if m := skilltest.Manifest(t, bin); m.Name != "policy" || strings.Join(m.Tools, ",") != "get_clause,search_policies" ||
		strings.Join(m.Tags, ",") != "policy,制度,条例,hr,报销,compliance" {
		t.Fatalf("manifest: %+v", m)
	}
	res := searchCall(t, skilltest.Exec(t, bin), map[string]any{"query": "请假流程"})
	if len(res.Results) == 0 || res.Results[0].Document != "leave" {
		t.Fatalf("search over a subprocess = %+v", res)
	}
}
