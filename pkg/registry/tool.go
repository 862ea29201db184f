package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Backend is the running instance that serves one skill version. The loader
// implements it; the registry only routes calls to it.
//
// Acquire and Release bracket every call and may be called from any number of
// goroutines. Acquire must return false once the instance is draining or
// stopped: the registry then re-reads its snapshot, which the loader updates
// before it starts draining, and retries there. Invoke is called only between
// a successful Acquire and its Release; it must return when ctx is done, and
// report failures as *Error (skill_crashed, skill_unavailable, tool_error,
// response_too_large, ...).
type Backend interface {
	Acquire() bool
	Release()
	Invoke(ctx context.Context, tool string, args []byte, maxResponse int64) ([]byte, error)
}

// Limits bound the calls to one skill version. Zero fields take the defaults
// of DefaultLimits.
type Limits struct {
	Timeout          time.Duration
	MaxConcurrency   int
	MaxRequestBytes  int64
	MaxResponseBytes int64
}

// DefaultLimits are the limits of a manifest that sets none.
var DefaultLimits = Limits{
	Timeout:          30 * time.Second,
	MaxConcurrency:   64,
	MaxRequestBytes:  1 << 20,
	MaxResponseBytes: 4 << 20,
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	if l.MaxConcurrency <= 0 {
		l.MaxConcurrency = DefaultLimits.MaxConcurrency
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultLimits.MaxRequestBytes
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = DefaultLimits.MaxResponseBytes
	}
	return l
}

// Annotations are behaviour hints of a tool (MCP's readOnlyHint and friends).
type Annotations struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

// ToolSpec is a tool as a skill describes it.
type ToolSpec struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Tags         []string
	Annotations  Annotations
}

// SkillSpec is what the loader hands over for one serving skill version.
type SkillSpec struct {
	Name        string
	Version     string
	Description string
	Tags        []string
	Limits      Limits
	Tools       []ToolSpec
	Backend     Backend
}

// Tool is a registered tool. It is immutable once published.
type Tool struct {
	Skill        string          `json:"skill"`
	Version      string          `json:"version"`
	Name         string          `json:"name"`     // skill.tool
	LLMName      string          `json:"llm_name"` // skill__tool
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Tags         []string        `json:"tags"` // the tool's own tags and its skill's
	Annotations  Annotations     `json:"annotations"`

	local     string // the tool name inside its skill
	schema    *jsonschema.Schema
	fast      *fastSchema        // nil when the schema is beyond its subset
	outSchema *jsonschema.Schema // nil when the tool declares no output schema
	outFast   *fastSchema
	skill     *skillEntry
}

// Available reports whether calls to the tool can be served now (false while
// its skill restarts after a crash).
func (t *Tool) Available() bool { return t.skill.available.Load() }

// LocalName is the tool's name inside its skill.
func (t *Tool) LocalName() string { return t.local }

// MaxSchemaBytes caps one tool schema; a skill describing more is refused.
const MaxSchemaBytes = 1 << 20

// compileSchema compiles an input schema under draft 2020-12. The compiler
// may load nothing: every $ref must point inside the schema itself, because a
// skill's schema is untrusted input and a $ref to file:///etc/passwd or an
// http:// URL must neither read the file nor touch the network.
func compileSchema(url string, raw json.RawMessage) (s *jsonschema.Schema, err error) {
	// A skill's schema is untrusted input: a panic in the compiler fails the
	// tool, not the host.
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("schema could not be compiled: %v", p)
		}
	}()
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes, over the %d-byte cap", len(raw), MaxSchemaBytes)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schema references %q: external references are not allowed", s)
	}
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

var errNotObject = errors.New(`input schema must have "type": "object"`)

func checkObjectSchema(raw json.RawMessage) error {
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if top.Type != "object" {
		return errNotObject
	}
	return nil
}

// compileSkill validates a spec and builds its entry, outside any lock
// (schema compilation is the expensive part of a swap). Every problem is
// reported, joined.
// compileSkill checks spec and compiles its tools' schemas. prev is the
// version that serves now, or nil: a tool whose schema bytes have not
// changed takes its compiled schemas from prev, since compiling them is
// most of a publish's cost and a hot reload usually changes code, not
// schemas. A compiled schema is never modified, so sharing it is safe.
func compileSkill(spec SkillSpec, prev *skillEntry) (*skillEntry, error) {
	before := map[string]*Tool{}
	if prev != nil {
		for _, t := range prev.tools {
			before[t.local] = t
		}
	}
	var errs []error
	if !ValidName(spec.Name) {
		errs = append(errs, fmt.Errorf("skill name %q must match %s", spec.Name, nameRE))
	}
	if spec.Backend == nil {
		errs = append(errs, fmt.Errorf("skill %s: no backend", spec.Name))
	}
	e := &skillEntry{
		name: spec.Name, version: spec.Version, description: spec.Description,
		tags: normTags(spec.Tags), limits: spec.Limits.withDefaults(), backend: spec.Backend,
		inflight: new(counter),
	}
	seen := map[string]bool{}
	for i, ts := range spec.Tools {
		where := fmt.Sprintf("tool %d (%q)", i, ts.Name)
		var terrs []error
		if !ValidName(ts.Name) {
			terrs = append(terrs, fmt.Errorf("name must match %s", nameRE))
		} else if len(LLMName(spec.Name, ts.Name)) > MaxQualifiedName {
			terrs = append(terrs, fmt.Errorf("%s is longer than %d characters", LLMName(spec.Name, ts.Name), MaxQualifiedName))
		}
		if seen[ts.Name] {
			terrs = append(terrs, errors.New("described twice"))
		}
		seen[ts.Name] = true
		if strings.TrimSpace(ts.Description) == "" {
			terrs = append(terrs, errors.New("description is empty"))
		}
		was := before[ts.Name]
		var schema *jsonschema.Schema
		var fast *fastSchema
		if was != nil && was.schema != nil && bytes.Equal(was.InputSchema, ts.InputSchema) {
			schema, fast = was.schema, was.fast
		} else if err := checkObjectSchema(ts.InputSchema); err != nil {
			terrs = append(terrs, err)
		} else if s, err := compileSchema("skillhost:///"+spec.Name+"/"+ts.Name+"/input.json", ts.InputSchema); err != nil {
			terrs = append(terrs, fmt.Errorf("input schema does not compile: %w", err))
		} else {
			schema, fast = s, compileFast(ts.InputSchema)
		}
		var out *jsonschema.Schema
		var outFast *fastSchema
		if len(ts.OutputSchema) > 0 {
			if was != nil && was.outSchema != nil && bytes.Equal(was.OutputSchema, ts.OutputSchema) {
				out, outFast = was.outSchema, was.outFast
			} else if s, err := compileSchema("skillhost:///"+spec.Name+"/"+ts.Name+"/output.json", ts.OutputSchema); err != nil {
				terrs = append(terrs, fmt.Errorf("output schema does not compile: %w", err))
			} else {
				out, outFast = s, compileFast(ts.OutputSchema)
			}
		}
		if len(terrs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %w", where, errors.Join(terrs...)))
			continue
		}
		t := &Tool{
			Skill: spec.Name, Version: spec.Version,
			Name: Qualified(spec.Name, ts.Name), LLMName: LLMName(spec.Name, ts.Name),
			Description: ts.Description, InputSchema: ts.InputSchema, OutputSchema: ts.OutputSchema,
			Tags: mergeTags(normTags(ts.Tags), e.tags), Annotations: ts.Annotations,
			local: ts.Name, schema: schema, fast: fast, skill: e,
		}
		if out != nil {
			t.outSchema, t.outFast = out, outFast
		}
		e.tools = append(e.tools, t)
	}
	if len(errs) > 0 {
		return nil, &Error{Code: CodeInvalidTool, Message: errors.Join(errs...).Error()}
	}
	return e, nil
}

func normTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func mergeTags(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, t := range b {
		dup := false
		for _, o := range out {
			if o == t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// Limits returns the limits of the skill version that serves t.
func (t *Tool) Limits() Limits { return t.skill.limits }
