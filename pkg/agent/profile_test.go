package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/registry"
)

func TestParseProfilesDefaults(t *testing.T) {
	ps := testProfiles(t, `{"profiles": {"only": {"skills": ["calc"]}}}`)
	p, ok := ps.Get("")
	if !ok || p.Name != "only" || ps.Default() != "only" {
		t.Fatalf("default profile = %+v", p)
	}
	if p.Mode != ModeReadOnly || p.MaxSteps != DefaultMaxSteps || p.MaxTools != DefaultMaxTools ||
		p.ContextBudget != DefaultContextBudget || p.Temperature != nil || ps.MaxDepth() != DefaultMaxDepth {
		t.Fatalf("defaults not applied: %+v depth %d", p, ps.MaxDepth())
	}
	d := DefaultProfiles()
	if p, ok := d.Get(""); !ok || p.Name != "default" || p.Mode != ModeReadOnly {
		t.Fatalf("DefaultProfiles = %+v", d)
	}
}

func TestParseProfilesReportsEveryProblem(t *testing.T) {
	_, err := ParseProfiles([]byte(`{
	  "max_delegation_depth": 9,
	  "profiles": {
	    "a": {"mode": "admin", "max_steps": 1000, "delegates": ["a", "ghost"]},
	    "Bad Name": {"temperature": 3, "skills": ["x__y"], "context_budget": -1},
	    "c": {"max_tools": 500, "tags": [" "], "delegates": ["w"]},
	    "w": {"mode": "full"},
	    "many": {"max_tools": 128, "delegates": ["c"]}
	  }
	}`), "json")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"max_delegation_depth: must be from 0 to 8",
		`profiles.a.mode: must be "read_only" or "full", not "admin"`,
		"profiles.a.max_steps: must be from 1 to 100",
		"profiles.a.delegates[0]: a profile cannot delegate to itself",
		`profiles.a.delegates[1]: no profile named "ghost"`,
		"profiles.Bad Name: profile name must be",
		"profiles.Bad Name.temperature: must be from 0 to 2",
		`profiles.Bad Name.skills[0]: "x__y" is not a valid skill name`,
		"profiles.Bad Name.context_budget: must be a positive number",
		"profiles.c.max_tools: must be from 1 to 128",
		"profiles.c.tags[0]: is empty",
		"profiles.many.max_tools: 128 plus 1 delegates make 129 tools, more than the 128 a request may carry",
		`profiles.c.delegates[0]: "w" is mode full, and a read_only profile must not reach write tools through a delegate`,
		"default: name the profile a run gets",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseProfilesRefusesUnknownFields(t *testing.T) {
	for _, doc := range []string{
		`{"profiles": {"a": {"mode": "full", "tols": ["x"]}}}`,
		`{"profile": {"a": {}}}`,
	} {
		if _, err := ParseProfiles([]byte(doc), "json"); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: err = %v", doc, err)
		}
	}
	if _, err := ParseProfiles([]byte("profiles:\n  a:\n    mdoe: full\n"), "yaml"); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("yaml: err = %v", err)
	}
}

// The YAML form is the JSON form, field for field.
func TestParseProfilesYAML(t *testing.T) {
	y := `
default: researcher
max_delegation_depth: 1
profiles:
  researcher:
    system: |
      Research step by step.
    skills: [calc, textkit]
    delegates: [policy-officer]
    temperature: 0
  policy-officer:
    tags: [制度, Policy]
    mode: read_only
    max_tools: 3
`
	ps, err := ParseProfiles([]byte(y), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ps.Get("")
	po, _ := ps.Get("policy-officer")
	if r.Name != "researcher" || r.System != "Research step by step.\n" || r.Temperature == nil || *r.Temperature != 0 ||
		strings.Join(r.Delegates, ",") != "policy-officer" || ps.MaxDepth() != 1 {
		t.Fatalf("researcher = %+v", r)
	}
	if strings.Join(po.Tags, ",") != "policy,制度" || po.MaxTools != 3 {
		t.Fatalf("policy-officer = %+v", po)
	}
}

func TestLoadProfilesByExtension(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "agents.yml")
	os.WriteFile(yml, []byte("profiles:\n  a: {mode: full}\n"), 0o644)
	ps, err := LoadProfiles(yml)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := ps.Get("a"); p.Mode != ModeFull {
		t.Fatalf("a = %+v", p)
	}
	js := filepath.Join(dir, "agents.json")
	os.WriteFile(js, []byte("profiles:\n  a: {}\n"), 0o644)
	if _, err := LoadProfiles(js); err == nil || !strings.Contains(err.Error(), js) {
		t.Fatalf("YAML in a .json file: err = %v", err)
	}
	if _, err := LoadProfiles(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestExampleAgentsFile(t *testing.T) {
	ps, err := LoadProfiles(filepath.Join(testenv.ModuleRoot(), "examples", "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ps.Names(), ","); got != "assistant,policy-officer,researcher" || ps.Default() != "assistant" {
		t.Fatalf("profiles = %s, default %s", got, ps.Default())
	}
	r, _ := ps.Get("researcher")
	if strings.Join(r.Delegates, ",") != "policy-officer" {
		t.Fatalf("researcher = %+v", r)
	}
	for _, n := range ps.Names() {
		if p, _ := ps.Get(n); p.Mode != ModeReadOnly {
			t.Errorf("example profile %s is not read-only", n)
		}
	}
}

func TestProfilePermits(t *testing.T) {
	ro := &registry.Tool{Skill: "policy", Tags: []string{"policy", "制度"}, Annotations: registry.Annotations{ReadOnly: true}}
	rw := &registry.Tool{Skill: "policy", Tags: []string{"policy"}}
	other := &registry.Tool{Skill: "calc", Tags: []string{"math"}, Annotations: registry.Annotations{ReadOnly: true}}
	for _, tt := range []struct {
		p     Profile
		tool  *registry.Tool
		allow bool
	}{
		{Profile{Mode: ModeReadOnly}, ro, true},
		{Profile{Mode: ModeReadOnly}, rw, false},
		{Profile{Mode: ModeFull}, rw, true},
		{Profile{Mode: ModeReadOnly, Tags: []string{"制度"}}, ro, true},
		{Profile{Mode: ModeReadOnly, Tags: []string{"制度"}}, other, false},
		{Profile{Mode: ModeFull, Skills: []string{"calc"}}, rw, false},
		{Profile{Mode: ModeFull, Skills: []string{"calc"}}, other, true},
		// Built in code, without ParseProfiles: it fails closed.
		{Profile{}, rw, false},
		{Profile{Mode: "admin"}, rw, false},
		{Profile{Mode: ModeFull, Tags: []string{"policy", "制度"}, Match: "most"}, rw, false},
		{Profile{Mode: ModeFull, Tags: []string{"policy", "制度"}, Match: "all"}, ro, true},
	} {
		if got := tt.p.permits(tt.tool); got != tt.allow {
			t.Errorf("%+v permits %s %v = %v", tt.p, tt.tool.Skill, tt.tool.Tags, got)
		}
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	os.WriteFile(good, []byte("  sk-abc \nsecond line\n"), 0o600)
	if k, err := ReadKeyFile(good); err != nil || k != "sk-abc" {
		t.Fatalf("key = %q, %v", k, err)
	}
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("sk-abc\n"), 0o644)
	if _, err := ReadKeyFile(open); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group-readable key file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, err := ReadKeyFile(empty); err == nil {
		t.Fatal("empty key accepted")
	}
}
