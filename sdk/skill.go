package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Version is the SDK version reported to the host in Describe.
const Version = "0.1.0"

// The host's rules for names, versions and descriptions (pkg/registry's
// names.go and compileSkill, pkg/manifest's load.go and manifest schema),
// repeated here because the SDK cannot import the host, which imports the
// SDK. Checking them at registration turns a skill the host would refuse
// into a panic in the skill's own tests.
var (
	// nameRE is the rule for skill and tool names. It keeps "__" out of a
	// name, so that skill__tool maps back to skill.tool.
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)
	// versionRE is a strict semantic version, as the version folder's name
	// must be: MAJOR.MINOR.PATCH, an optional -prerelease and +build, no
	// leading zeros, no "v".
	versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
		`(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?` +
		`(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
)

const (
	maxSkillName     = 32  // a skill folder's name
	maxVersion       = 128 // the manifest's version
	maxQualifiedName = 64  // skill__tool: OpenAI's limit on a function name
)

// checkSkill says what the host would refuse in a skill's name, version or
// description, or returns nil.
func checkSkill(name, version, description string) error {
	var errs []error
	if !nameRE.MatchString(name) || len(name) > maxSkillName {
		errs = append(errs, fmt.Errorf("skill name %q must match %s and have at most %d characters", name, nameRE, maxSkillName))
	}
	if !versionRE.MatchString(version) || len(version) > maxVersion {
		errs = append(errs, fmt.Errorf("skill %s: version %q is not a semantic version (MAJOR.MINOR.PATCH, no leading \"v\")", name, version))
	}
	if strings.TrimSpace(description) == "" {
		errs = append(errs, fmt.Errorf("skill %s: the description is empty", name))
	}
	return errors.Join(errs...)
}

// checkTool says what the host would refuse in a tool's name or
// description, or returns nil.
func checkTool(skill, name, description string) error {
	switch {
	case !nameRE.MatchString(name):
		return fmt.Errorf("tool name %q must match %s", name, nameRE)
	case len(skill)+len("__")+len(name) > maxQualifiedName:
		return fmt.Errorf("tool %q: %s__%s, its name for models, has more than %d characters", name, skill, name, maxQualifiedName)
	case strings.TrimSpace(description) == "":
		return fmt.Errorf("tool %q: the description is empty; it is what a model reads to choose the tool", name)
	}
	return nil
}

// check is checkSkill and checkTool over s as it is now: its exported
// fields may have changed since New.
func (s *Skill) check() error {
	errs := []error{checkSkill(s.Name, s.Version, s.Description)}
	for _, name := range s.order {
		if err := checkTool(s.Name, name, s.tools[name].description); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Skill is a named, versioned set of tools. Build one with [New], add tools
// with [Tool], then call [Skill.Serve] from main. A Skill is not safe for
// concurrent configuration; once serving, its handlers run concurrently.
type Skill struct {
	Name        string
	Version     string
	Description string
	Tags        []string
	// Author, Env and Limits end up in the manifest skeleton.
	Author string
	Env    map[string]string
	Limits *Limits
	// Uses lists the hosted tools the skill's handlers call with [Call]
	// ("skill.tool", or "skill.*"), for the manifest: the host refuses a
	// call to a tool that the manifest does not list.
	Uses []string

	tools map[string]*toolDef
	order []string
}

// Annotations are hints about a tool's behaviour, passed to clients as
// MCP-style hints and used by the host (read-only profiles only offer tools
// annotated ReadOnly).
type Annotations struct {
	ReadOnly    bool `json:"read_only,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty"`
	OpenWorld   bool `json:"open_world,omitempty"`
}

type toolDef struct {
	name        string
	description string
	input       json.RawMessage
	output      json.RawMessage
	tags        []string
	ann         Annotations
	call        func(ctx context.Context, args []byte) ([]byte, error)
}

// New returns an empty skill. name must match the skill folder name and
// version the version folder (semver) it is installed under. New panics on
// what the host would refuse: a name that breaks the name rule (lowercase
// words joined by single _ or -, at most 32 characters), a version that is
// not a strict semantic version, an empty description.
func New(name, version, description string) *Skill {
	if err := checkSkill(name, version, description); err != nil {
		panic("sdk: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return &Skill{Name: name, Version: version, Description: description, tools: map[string]*toolDef{}}
}

// ToolOption configures one tool.
type ToolOption func(*toolDef)

// WithTags adds tags to a tool, on top of the skill's tags.
func WithTags(tags ...string) ToolOption {
	return func(t *toolDef) { t.tags = append(t.tags, tags...) }
}

// WithAnnotations sets a tool's behaviour hints.
func WithAnnotations(a Annotations) ToolOption { return func(t *toolDef) { t.ann = a } }

// ReadOnly marks a tool as having no side effects (and so idempotent).
func ReadOnly() ToolOption {
	return func(t *toolDef) { t.ann.ReadOnly, t.ann.Idempotent = true, true }
}

// Tool registers a typed tool on s. In must be a struct (or a map) whose JSON
// form is an object: it becomes the tool's input schema. Out is encoded with
// encoding/json; a json.RawMessage is passed through unchanged. The output
// schema of a json.RawMessage or an interface type is true (any JSON value).
//
// Tool panics on a programming error, because those are caught the first
// time the skill runs in a test: a name the host would refuse (see the name
// rule at New; skill__tool at most 64 characters), a duplicate, an empty
// description, a non-object input, a recursive In or Out type.
func Tool[In, Out any](s *Skill, name, description string, h func(ctx context.Context, in In) (Out, error), opts ...ToolOption) {
	if err := checkTool(s.Name, name, description); err != nil {
		panic("sdk: " + err.Error())
	}
	if _, dup := s.tools[name]; dup {
		panic(fmt.Sprintf("sdk: tool %q registered twice", name))
	}
	in, err := schemaFor[In]()
	if err != nil {
		panic(fmt.Sprintf("sdk: tool %q: input: %v", name, err))
	}
	var probe struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(in, &probe) != nil || probe.Type != "object" {
		panic(fmt.Sprintf("sdk: tool %q: input type must encode as a JSON object, got schema %s", name, in))
	}
	out, err := outputSchemaFor[Out]()
	if err != nil {
		panic(fmt.Sprintf("sdk: tool %q: output: %v", name, err))
	}
	td := &toolDef{
		name: name, description: description, input: in, output: out,
		call: func(ctx context.Context, args []byte) ([]byte, error) {
			var v In
			if len(args) > 0 {
				if err := json.Unmarshal(args, &v); err != nil {
					return nil, &Error{Code: "invalid_arguments", Message: err.Error()}
				}
			}
			res, err := h(ctx, v)
			if err != nil {
				return nil, err
			}
			if raw, ok := any(res).(json.RawMessage); ok {
				return raw, nil
			}
			return json.Marshal(res)
		},
	}
	for _, o := range opts {
		o(td)
	}
	s.tools[name] = td
	s.order = append(s.order, name)
}

// ToolNames returns the registered tool names in registration order.
func (s *Skill) ToolNames() []string { return append([]string(nil), s.order...) }

// Limits are the manifest's call limits; zero fields are left to the host's
// defaults (30 s, 64 concurrent calls, 1 MiB requests, 4 MiB responses).
type Limits struct {
	TimeoutMS        int   `json:"timeout_ms,omitempty"`
	MaxConcurrency   int   `json:"max_concurrency,omitempty"`
	MaxRequestBytes  int64 `json:"max_request_bytes,omitempty"`
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty"`
}

// ManifestSkeleton is what a skill prints with --manifest: the manifest
// without the entrypoint checksum, which only the build can know.
type ManifestSkeleton struct {
	ManifestVersion int               `json:"manifest_version"`
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	Description     string            `json:"description"`
	Entrypoint      string            `json:"entrypoint"`
	Tags            []string          `json:"tags"`
	Tools           []string          `json:"tools"`
	Author          string            `json:"author,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	Limits          *Limits           `json:"limits,omitempty"`
	Uses            []string          `json:"uses,omitempty"`
}

// Manifest returns the skeleton for entrypoint (the binary's file name).
func (s *Skill) Manifest(entrypoint string) ManifestSkeleton {
	tools := s.ToolNames()
	sort.Strings(tools)
	tags := s.Tags
	if tags == nil {
		tags = []string{}
	}
	return ManifestSkeleton{
		ManifestVersion: 1, Name: s.Name, Version: s.Version, Description: s.Description,
		Entrypoint: entrypoint, Tags: tags, Tools: tools, Author: s.Author, Env: s.Env, Limits: s.Limits, Uses: s.Uses,
	}
}
