package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk/skilltest"
)

func TestSkillDescribe(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range d.Tools {
		names = append(names, tool.Name)
		if !tool.Annotations.ReadOnly || tool.Description == "" {
			t.Errorf("tool %s: read_only=%v description=%q", tool.Name, tool.Annotations.ReadOnly, tool.Description)
		}
	}
	if d.Name != "textkit" || strings.Join(names, ",") != "count,slugify,case,truncate" {
		t.Fatalf("describe: name %s tools %v", d.Name, names)
	}
	if s := string(d.Tools[2].InputSchema); !strings.Contains(s, `"enum":["upper","lower","title","snake","camel","pascal","kebab","constant"]`) {
		t.Errorf("case schema = %s", s)
	}
	if s := string(d.Tools[3].InputSchema); !strings.Contains(s, `"required":["text","max_runes"]`) {
		t.Errorf("truncate schema = %s", s)
	}
}

func TestSkillInvoke(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	ctx := context.Background()
	call := func(tool string, args any) string {
		t.Helper()
		res, err := c.Call(ctx, tool, args)
		if err != nil {
			t.Fatalf("%s(%v): %v", tool, args, err)
		}
		return string(res)
	}
	if got := call("count", map[string]any{"text": "报销 policy"}); got !=
		`{"characters":9,"bytes":13,"words":3,"lines":1,"whitespace":1,"scripts":{"han":2,"latin":6,"other":0}}` {
		t.Errorf("count = %s", got)
	}
	if got := call("slugify", map[string]any{"text": "Remote Work Policy 2026"}); got != `{"slug":"remote-work-policy-2026"}` {
		t.Errorf("slugify = %s", got)
	}
	if got := call("case", map[string]any{"text": "max retry count", "to": "camel"}); got != `{"text":"maxRetryCount"}` {
		t.Errorf("case = %s", got)
	}
	if got := call("truncate", map[string]any{"text": "信息安全管理制度", "max_runes": 5}); got !=
		`{"text":"信息安全…","truncated":true,"runes":5,"original_runes":8}` {
		t.Errorf("truncate = %s", got)
	}
	if got := call("truncate", map[string]any{"text": "abcdef", "max_runes": 3, "suffix": ""}); got !=
		`{"text":"abc","truncated":true,"runes":3,"original_runes":6}` {
		t.Errorf("truncate without suffix = %s", got)
	}

	var te *skilltest.ToolError
	_, err := c.Call(ctx, "slugify", map[string]any{"text": "请假"})
	if !errors.As(err, &te) || te.Code != "empty_slug" {
		t.Errorf("slugify CJK = %v", err)
	}
	_, err = c.Call(ctx, "truncate", map[string]any{"text": "x", "max_runes": "two"})
	if !errors.As(err, &te) || te.Code != "invalid_arguments" {
		t.Errorf("truncate bad max_runes = %v", err)
	}
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the skill binary")
	}
	bin := skilltest.Build(t, ".")
	if m := skilltest.Manifest(t, bin); m.Name != "textkit" || strings.Join(m.Tools, ",") != "case,count,slugify,truncate" {
		t.Fatalf("manifest: %+v", m)
	}
	res, err := skilltest.Exec(t, bin).Call(context.Background(), "case", map[string]any{"text": "a b", "to": "kebab"})
	if err != nil || string(res) != `{"text":"a-b"}` {
		t.Fatalf("case over a subprocess = %s, %v", res, err)
	}
}
