package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// napSkill is an Agent Skill whose instructions use alpha's sleep tool.
const napSkill = `---
name: nap-taker
description: Pause between two steps of a task by sleeping for some milliseconds, then carry on.
metadata:
  tags: timing
---

# Taking a nap

Call ` + "`alpha.sleep`" + ` with {"ms": 1}, then say what it returned. The details are in references/why.md.
`

// testCatalog publishes the given SKILL.md folders (name → SKILL.md, plus extra files).
func testCatalog(t *testing.T, files map[string]string) *skills.Catalog {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := skillmd.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	c := skills.New()
	c.Publish(found)
	if c.Snapshot().Len() == 0 {
		t.Fatalf("no skill serves: %+v", found)
	}
	return c
}

func napCatalog(t *testing.T) *skills.Catalog {
	return testCatalog(t, map[string]string{
		"nap-taker/SKILL.md":          napSkill,
		"nap-taker/references/why.md": "Short naps keep the rhythm.\n",
	})
}

const disclosureProfiles = `{"default": "doer", "profiles": {
  "doer":   {"skills": ["alpha"], "mode": "full", "max_tools": 1},
  "reader": {"skills": ["alpha"], "max_tools": 1},
  "fenced": {"skills": ["alpha"], "mode": "full", "max_tools": 1, "agent_skills": ["someone-else"]}
}}`

func toolNames(tools []openai.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// The request fits a skill whose tool the first pick did not offer: the model activates the
// skill, reads its reference, the tool arrives in the next request, and the answer uses it.
func TestActivateSkillBringsItsTools(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("a1", toolActivateSkill, `{"name":"nap-taker"}`)),
		calls(tc("r1", toolReadSkillFile, `{"skill":"nap-taker","path":"references/why.md"}`), tc("s1", "alpha__sleep", `{"ms":1}`)),
		text("I paused; the nap said what it says."))
	a, _ := newTestAgent(t, f, disclosureProfiles, func(c *Config) { c.Skills = napCatalog(t) })
	var evs events
	resp, err := ask(a, "doer", "echo hello, but pause between two steps", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	first := f.request(0).req
	if names := toolNames(first.Tools); slices.Contains(names, "alpha__sleep") || !slices.Contains(names, toolActivateSkill) {
		t.Fatalf("first tools = %v; want no alpha__sleep and activate_skill", names)
	}
	if sys := first.Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "- nap-taker: Pause between two steps") {
		t.Fatalf("first message = %+v; want the skill catalog", sys)
	}
	activation := f.request(1).req.Messages[len(f.request(1).req.Messages)-1]
	var act struct {
		Instructions string   `json:"instructions"`
		Files        []string `json:"files"`
		Added        []string `json:"tools_added"`
	}
	if err := json.Unmarshal([]byte(activation.Content), &act); err != nil {
		t.Fatalf("activation result %q: %v", activation.Content, err)
	}
	if !strings.Contains(act.Instructions, "# Taking a nap") || !slices.Equal(act.Added, []string{"alpha__sleep"}) || !slices.Equal(act.Files, []string{"references/why.md"}) {
		t.Fatalf("activation = %+v", act)
	}
	if names := toolNames(f.request(1).req.Tools); !slices.Contains(names, "alpha__sleep") {
		t.Fatalf("second request's tools = %v; want alpha__sleep, added by the activation", names)
	}
	msgs := f.request(2).req.Messages
	if read := msgs[len(msgs)-2]; !strings.Contains(read.Content, "Short naps keep the rhythm.") {
		t.Fatalf("read_skill_file result = %q", read.Content)
	}
	if slept := msgs[len(msgs)-1]; slept.ToolCallID != "s1" || strings.Contains(slept.Content, `"error"`) {
		t.Fatalf("alpha__sleep result = %+v", slept)
	}
	if resp.Counters.SkillActivations != 1 || resp.Skills["alpha"] != "1.0.0" {
		t.Fatalf("response = %+v", resp)
	}
	var added []string
	for _, e := range evs.list() {
		if e.Type == EventToolsAdded {
			added = append(added, e.Tools...)
		}
	}
	if !slices.Equal(added, []string{"alpha__sleep"}) {
		t.Fatalf("tools_added events = %v", added)
	}
}

// The catalog did not list the skill (the request's words miss it); the model searches,
// finds it, activates it, and the tool arrives.
func TestSearchToolsFindsWhatTheFirstPickMissed(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("q1", toolSearchTools, `{"query":"pause between steps"}`)),
		calls(tc("a1", toolActivateSkill, `{"name":"nap-taker"}`)),
		calls(tc("s1", "alpha__sleep", `{"ms":1}`)),
		text("Done."))
	a, _ := newTestAgent(t, f, disclosureProfiles, func(c *Config) { c.Skills = napCatalog(t) })
	resp, err := ask(a, "doer", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := f.request(0).req
	if first.Messages[0].Role == "system" {
		t.Fatalf("a catalog was offered for a request no skill fits: %q", first.Messages[0].Content)
	}
	if names := toolNames(first.Tools); !slices.Equal(names, []string{"alpha__echo", toolActivateSkill, toolReadSkillFile, toolSearchTools}) {
		t.Fatalf("first tools = %v", names)
	}
	found := f.request(1).req.Messages[len(f.request(1).req.Messages)-1].Content
	if !strings.Contains(found, `"name":"nap-taker"`) {
		t.Fatalf("search_tools result %s does not list the skill", found)
	}
	if names := toolNames(f.request(2).req.Tools); !slices.Contains(names, "alpha__sleep") {
		t.Fatalf("tools after search and activation = %v", names)
	}
	if resp.Answer != "Done." || resp.Counters.ToolSearches != 1 || resp.Counters.ToolErrors != 0 {
		t.Fatalf("response = %+v", resp)
	}
}

// A read-only profile activating a skill that names a write tool gets the instructions but
// not the tool, and a search never adds one either; a profile bounded to other skills cannot
// activate it at all.
func TestDisclosureStaysUnderTheProfile(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("a1", toolActivateSkill, `{"name":"nap-taker"}`), tc("q1", toolSearchTools, `{"query":"sleep"}`)),
		text("Cannot."),
		calls(tc("a2", toolActivateSkill, `{"name":"nap-taker"}`)),
		text("No skill."))
	a, _ := newTestAgent(t, f, disclosureProfiles, func(c *Config) { c.Skills = napCatalog(t) })
	if _, err := ask(a, "reader", "echo hello, but pause between two steps", false, nil); err != nil {
		t.Fatal(err)
	}
	msgs := f.request(1).req.Messages
	act, search := msgs[len(msgs)-2].Content, msgs[len(msgs)-1].Content
	if !strings.Contains(act, "# Taking a nap") || strings.Contains(act, "tools_added") ||
		!strings.Contains(act, `"tool":"alpha__sleep","reason":"profile reader may not use it"`) {
		t.Fatalf("activation under a read-only profile = %s", act)
	}
	if strings.Contains(search, "alpha__sleep") {
		t.Fatalf("search under a read-only profile showed a write tool: %s", search)
	}
	if names := toolNames(f.request(1).req.Tools); slices.Contains(names, "alpha__sleep") {
		t.Fatalf("a read-only profile got a write tool: %v", names)
	}

	if _, err := ask(a, "fenced", "echo hello, but pause between two steps", false, nil); err != nil {
		t.Fatal(err)
	}
	fenced := f.request(2).req
	if fenced.Messages[0].Role == "system" {
		t.Fatalf("a profile bounded to other skills was shown the catalog: %q", fenced.Messages[0].Content)
	}
	last := f.request(3).req.Messages
	if e := toolError(t, last[len(last)-1].Content); e.Code != "unknown_tool" && e.Code != "not_found" {
		t.Fatalf("activation outside the profile's skills = %+v", e)
	}
}

// A tied skill (SKILL.md beside the binary's manifest.json) whose instructions name none of
// its own tools brings all of them that the profile permits: instructions shipped with a
// binary are about that binary.
func TestActivatingATiedSkillBringsItsBinarysTools(t *testing.T) {
	catalog := testCatalog(t, map[string]string{
		"alpha/1.0.0/SKILL.md":      "---\nname: alpha\ndescription: How to drive the alpha test skill well.\n---\n\nStart small.\n",
		"alpha/1.0.0/manifest.json": `{"manifest_version": 1, "name": "alpha", "version": "1.0.0", "entrypoint": "skill"}`,
	})
	if e, _ := catalog.Snapshot().Get("alpha"); !e.Serving.Tied {
		t.Fatalf("alpha is not tied: %+v", e.Serving)
	}
	f := newFakeLLM(t, calls(tc("a1", toolActivateSkill, `{"name":"alpha"}`)), text("ok"))
	a, _ := newTestAgent(t, f, disclosureProfiles, func(c *Config) { c.Skills = catalog })
	if _, err := ask(a, "reader", "drive the alpha test skill", false, nil); err != nil {
		t.Fatal(err)
	}
	got := toolNames(f.request(1).req.Tools)
	for _, want := range []string{"alpha__big", "alpha__echo", "alpha__env"} {
		if !slices.Contains(got, want) {
			t.Errorf("after activating tied alpha the tools are %v; want %s", got, want)
		}
	}
	if slices.Contains(got, "alpha__sleep") {
		t.Errorf("a read-only profile got alpha__sleep through a tied skill: %v", got)
	}
}

// What activation adds is capped by max_added_tools and by the context budget, and the
// answer says which tools were left out and why.
func TestAddedToolsAreCapped(t *testing.T) {
	catalog := testCatalog(t, map[string]string{
		"two-tools/SKILL.md": "---\nname: two-tools\ndescription: Sleep and crash on purpose.\n---\n\nUse alpha.sleep, then alpha.crash.\n",
	})
	const doc = `{"default": "capped", "profiles": {
	  "capped": {"skills": ["alpha"], "mode": "full", "max_tools": 1, "max_added_tools": 1},
	  "tight":  {"skills": ["alpha"], "mode": "full", "max_tools": 1, "context_budget": 800}
	}}`
	f := newFakeLLM(t,
		calls(tc("a1", toolActivateSkill, `{"name":"two-tools"}`)), text("ok"),
		calls(tc("a2", toolActivateSkill, `{"name":"two-tools"}`)), text("ok"))
	a, _ := newTestAgent(t, f, doc, func(c *Config) { c.Skills = catalog })
	for _, p := range []string{"capped", "tight"} {
		if _, err := ask(a, p, "echo hello", false, nil); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	result := func(i int) string { m := f.request(i).req.Messages; return m[len(m)-1].Content }
	if r := result(1); !strings.Contains(r, `"tools_added":["alpha__crash"]`) || !strings.Contains(r, "max_added_tools (1) is reached") {
		t.Fatalf("capped activation = %s", r)
	}
	if r := result(3); !strings.Contains(r, "does not fit") {
		t.Fatalf("activation over the budget = %s", r)
	}
}
