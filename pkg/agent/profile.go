package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Mode says which tools a profile may use.
type Mode string

const (
	// ModeReadOnly offers, and lets the model call, only tools their skill
	// annotates read-only. It is the default.
	ModeReadOnly Mode = "read_only"
	// ModeFull offers every tool the profile's tags and skills allow.
	ModeFull Mode = "full"
)

// Profile defaults, applied by [ParseProfiles] to fields left zero.
const (
	DefaultMaxSteps      = 8
	DefaultMaxTools      = registry.DefaultLimit
	DefaultContextBudget = 16000 // tokens, as EstimateTokens counts them
	DefaultMaxDepth      = 2
	DefaultMaxSkills     = 3
	DefaultMaxAddedTools = 8
	// DefaultProfileName is the profile of a run that names none, when the
	// file names no default.
	DefaultProfileName = "default"
)

// Profile is one kind of agent: what it is told, which tools it sees and
// how far it may go. Each run names one.
type Profile struct {
	Name        string `json:"-"`
	Description string `json:"description,omitempty"` // what it is for; the delegate tool's description
	System      string `json:"system,omitempty"`      // system prompt; none when empty

	Tags   []string `json:"tags,omitempty"`   // offer only tools carrying one of these tags (any tag when empty)
	Match  string   `json:"match,omitempty"`  // "any" (default): one of the tags will do; "all": every one
	Skills []string `json:"skills,omitempty"` // offer only tools of these skills (any skill when empty)
	Mode   Mode     `json:"mode,omitempty"`   // read_only (default) or full

	MaxSteps      int      `json:"max_steps,omitempty"`      // model calls per run; default 8
	MaxTools      int      `json:"max_tools,omitempty"`      // prefiltered tools per request; default 5
	Model         string   `json:"model,omitempty"`          // overrides the host's --llm-model
	Temperature   *float32 `json:"temperature,omitempty"`    // the endpoint's default when unset
	ContextBudget int      `json:"context_budget,omitempty"` // estimated prompt tokens; default 16000

	// AgentSkills and AgentSkillTags bound the Agent Skills (SKILL.md instructions) the
	// profile may see, be offered and activate: by name, and by the tags in their
	// metadata.tags (one of them will do). Empty: any skill. They read like Skills and Tags
	// (registry.Filter's rules), but name instruction skills, not tools.
	AgentSkills    []string `json:"agent_skills,omitempty"`
	AgentSkillTags []string `json:"agent_skill_tags,omitempty"`
	// MaxSkills is how many skills that fit the request the catalog in the system prompt
	// shows; default 3, -1 offers none (and no activate_skill).
	MaxSkills int `json:"max_skills,omitempty"`
	// MaxAddedTools caps the tools activate_skill and search_tools may add to a run's tool
	// set, across the run; default 8, -1 adds none (and offers no search_tools).
	MaxAddedTools int `json:"max_added_tools,omitempty"`

	// Delegates are the profiles this one may hand a sub-task to, each
	// offered to the model as the tool delegate_<name>.
	Delegates []string `json:"delegates,omitempty"`
}

// Filter is the registry filter of the tools the profile may see and
// call. A profile built without [ParseProfiles] fails closed: any mode but
// full is read-only, and a match it cannot read is "all".
func (p *Profile) Filter() registry.Filter {
	all, err := registry.ParseMatch(p.Match)
	if err != nil {
		all = true
	}
	return registry.Filter{Tags: p.Tags, MatchAll: all, Skills: p.Skills, ReadOnly: p.Mode != ModeFull}
}

// permits reports whether the profile may see and call t.
func (p *Profile) permits(t *registry.Tool) bool { return p.Filter().Match(t) }

// Profiles is a validated set of profiles.
type Profiles struct {
	defaultName string
	maxDepth    int
	byName      map[string]*Profile
}

// Get returns the named profile; "" names the default.
func (ps *Profiles) Get(name string) (*Profile, bool) {
	if name == "" {
		name = ps.defaultName
	}
	p, ok := ps.byName[name]
	return p, ok
}

// Default is the name of the profile a run gets when it names none.
func (ps *Profiles) Default() string { return ps.defaultName }

// MaxDepth is how deep delegation may nest: a run at depth MaxDepth is not
// offered delegate tools. The top-level run is depth 0.
func (ps *Profiles) MaxDepth() int { return ps.maxDepth }

// Names returns the profile names, sorted.
func (ps *Profiles) Names() []string {
	out := make([]string, 0, len(ps.byName))
	for n := range ps.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultProfiles is what the host runs without --agents: one read-only
// profile named "default" over every tool.
func DefaultProfiles() *Profiles {
	ps, err := ParseProfiles([]byte(`{"profiles": {"default": {"description": "General assistant over every read-only tool."}}}`), "json")
	if err != nil {
		panic(err) // a constant; tested
	}
	return ps
}

// profilesFile is the config file: JSON, or YAML with the same fields.
type profilesFile struct {
	Default            string             `json:"default,omitempty"`
	MaxDelegationDepth *int               `json:"max_delegation_depth,omitempty"`
	Profiles           map[string]Profile `json:"profiles"`
}

// MaxProfilesBytes caps a profiles file.
const MaxProfilesBytes = 1 << 20

// LoadProfiles reads a profiles file: YAML when its name ends in .yaml or
// .yml, JSON otherwise.
func LoadProfiles(path string) (*Profiles, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxProfilesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	if len(b) > MaxProfilesBytes {
		return nil, fmt.Errorf("agents file %s is over %d bytes", path, MaxProfilesBytes)
	}
	format := "json"
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		format = "yaml"
	}
	ps, err := ParseProfiles(b, format)
	if err != nil {
		return nil, fmt.Errorf("agents file %s: %w", path, err)
	}
	return ps, nil
}

// ParseProfiles parses and validates a profiles document, format "json" or
// "yaml". Unknown fields are refused (a typo must not silently widen a
// profile), and every problem is reported at once, each with its path.
func ParseProfiles(data []byte, format string) (*Profiles, error) {
	switch format {
	case "json":
	case "yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		data = j
	default:
		return nil, fmt.Errorf("unknown profiles format %q: want json or yaml", format)
	}
	var file profilesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("not a valid profiles document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a valid profiles document: trailing data after the JSON value")
	}
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	ps := &Profiles{maxDepth: DefaultMaxDepth, byName: map[string]*Profile{}}
	if file.MaxDelegationDepth != nil {
		ps.maxDepth = *file.MaxDelegationDepth
		if ps.maxDepth < 0 || ps.maxDepth > 8 {
			bad("max_delegation_depth", "must be from 0 to 8, not %d", ps.maxDepth)
		}
	}
	if len(file.Profiles) == 0 {
		bad("profiles", "at least one profile is required")
	}
	names := make([]string, 0, len(file.Profiles))
	for n := range file.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := file.Profiles[name]
		at := "profiles." + name
		p.Name = name
		if !registry.ValidName(name) {
			bad(at, "profile name must be lowercase letters and digits joined by single - or _ (like a skill name)")
		}
		switch p.Mode {
		case "":
			p.Mode = ModeReadOnly
		case ModeReadOnly, ModeFull:
		default:
			bad(at+".mode", "must be %q or %q, not %q", ModeReadOnly, ModeFull, p.Mode)
		}
		if p.MaxSteps == 0 {
			p.MaxSteps = DefaultMaxSteps
		} else if p.MaxSteps < 1 || p.MaxSteps > 100 {
			bad(at+".max_steps", "must be from 1 to 100, not %d", p.MaxSteps)
		}
		if p.MaxTools == 0 {
			p.MaxTools = DefaultMaxTools
		} else if p.MaxTools < 1 || p.MaxTools > registry.MaxLimit {
			bad(at+".max_tools", "must be from 1 to %d, not %d", registry.MaxLimit, p.MaxTools)
		} else if n := p.MaxTools + len(p.Delegates); n > registry.MaxLimit {
			// Each delegate is one more tool in the request.
			bad(at+".max_tools", "%d plus %d delegates make %d tools, more than the %d a request may carry", p.MaxTools, len(p.Delegates), n, registry.MaxLimit)
		}
		if p.ContextBudget == 0 {
			p.ContextBudget = DefaultContextBudget
		} else if p.ContextBudget < 1 {
			bad(at+".context_budget", "must be a positive number of tokens, not %d", p.ContextBudget)
		}
		if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
			bad(at+".temperature", "must be from 0 to 2, not %g", *p.Temperature)
		}
		if _, err := registry.ParseMatch(p.Match); err != nil {
			bad(at+".match", "%v", err)
		}
		f, problems := p.Filter().Normalize()
		for _, pr := range problems {
			bad(at+"."+pr.Field, "%s", pr.Reason)
		}
		p.Tags, p.Skills = f.Tags, f.Skills
		sf, problems := p.skillFilter().Normalize()
		for _, pr := range problems {
			bad(at+".agent_"+strings.Replace(pr.Field, "tags", "skill_tags", 1), "%s", pr.Reason)
		}
		p.AgentSkillTags, p.AgentSkills = sf.Tags, sf.Skills
		switch {
		case p.MaxSkills == 0:
			p.MaxSkills = DefaultMaxSkills
		case p.MaxSkills < -1 || p.MaxSkills > 20:
			bad(at+".max_skills", "must be from 1 to 20, or -1 for none, not %d", p.MaxSkills)
		}
		switch {
		case p.MaxAddedTools == 0:
			p.MaxAddedTools = DefaultMaxAddedTools
		case p.MaxAddedTools < -1 || p.MaxAddedTools > registry.MaxLimit:
			bad(at+".max_added_tools", "must be from 1 to %d, or -1 for none, not %d", registry.MaxLimit, p.MaxAddedTools)
		}
		for i, d := range p.Delegates {
			switch dp, ok := file.Profiles[d]; {
			case d == name:
				bad(fmt.Sprintf("%s.delegates[%d]", at, i), "a profile cannot delegate to itself")
			case !ok:
				bad(fmt.Sprintf("%s.delegates[%d]", at, i), "no profile named %q", d)
			case p.Mode == ModeReadOnly && dp.Mode == ModeFull:
				// Its sub-agent would call what this profile may not.
				bad(fmt.Sprintf("%s.delegates[%d]", at, i), "%q is mode full, and a read_only profile must not reach write tools through a delegate; make %q read_only or drop it here", d, d)
			}
		}
		ps.byName[name] = &p
	}
	switch {
	case file.Default != "":
		ps.defaultName = file.Default
		if _, ok := ps.byName[file.Default]; !ok {
			bad("default", "no profile named %q", file.Default)
		}
	case ps.byName[DefaultProfileName] != nil:
		ps.defaultName = DefaultProfileName
	case len(names) == 1:
		ps.defaultName = names[0]
	case len(names) > 1:
		bad("default", "name the profile a run gets when it names none (there are %d profiles and none is called %q)", len(names), DefaultProfileName)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ps, nil
}
