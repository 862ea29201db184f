package mcprt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// MaxTools caps what one server may describe, as the loader caps a go-plugin
// skill: past it a server is a catalogue that would crowd every other skill
// out of search.
const MaxTools = 1000

// RefusedTool is a tool the server describes that the host will not serve,
// and why. The rest of the server's tools still serve: a third-party server
// is run unmodified, and one odd tool (a schema that does not compile, a
// name that cannot be mapped) must not cost the others. Refusals are kept
// for status and logged.
type RefusedTool struct {
	Name   string `json:"name"` // the server's own name for it
	Reason string `json:"reason"`
}

// toolSet is one tools/list answer, mapped. It is immutable once built.
type toolSet struct {
	specs   []registry.ToolSpec
	refused []RefusedTool
	wire    map[string]string // registry name → the server's name
}

// ToolName maps a server's tool name to the registry's rules: lowercase
// words joined by _ or - ("getTinyImage" → "get_tiny_image", "files.read" →
// "files_read"). ok is false when no valid name results.
func ToolName(name string) (string, bool) {
	if registry.ValidName(name) {
		return name, true
	}
	var b strings.Builder
	prevLower := false
	for _, r := range name {
		switch {
		case unicode.IsUpper(r) && r < unicode.MaxASCII:
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case r == '.' || r == ' ' || r == '/':
			b.WriteByte('_')
			prevLower = false
		default:
			b.WriteRune(r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		}
	}
	out := b.String()
	return out, registry.ValidName(out)
}

// mapTools turns a server's tools into registry specs. Each tool is checked
// alone with the registry's own rules (registry.Validate on a one-tool
// spec), so what is accepted here is exactly what a registry Put accepts.
func mapTools(skill string, tools []*mcpsdk.Tool, taskOnly map[string]bool) *toolSet {
	set := &toolSet{wire: map[string]string{}}
	for i, t := range tools {
		if i >= MaxTools {
			set.refused = append(set.refused, RefusedTool{Name: t.Name, Reason: fmt.Sprintf("over the cap of %d tools per skill", MaxTools)})
			continue
		}
		spec, err := mapTool(t)
		if err == nil && taskOnly[t.Name] {
			err = errors.New(`it can only be called as an MCP task ("execution": {"taskSupport": "required"}), which this host does not speak`)
		}
		if err == nil {
			if prev, dup := set.wire[spec.Name]; dup {
				err = fmt.Errorf("its name maps to %q, as %q's does", spec.Name, prev)
			}
		}
		if err == nil {
			err = registry.Validate(registry.SkillSpec{Name: skill, Tools: []registry.ToolSpec{spec}, Backend: noBackend{}})
		}
		if err != nil {
			set.refused = append(set.refused, RefusedTool{Name: t.Name, Reason: refusal(err)})
			continue
		}
		set.wire[spec.Name] = t.Name
		set.specs = append(set.specs, spec)
	}
	return set
}

// refusal is the reason without the registry's "tool 0 (...)" prefix, which
// names a one-tool spec that exists only here.
func refusal(err error) string {
	msg := err.Error()
	if e, ok := err.(*registry.Error); ok {
		msg = e.Message
	}
	if _, rest, ok := strings.Cut(msg, "): "); ok && strings.HasPrefix(msg, "tool 0 (") {
		msg = rest
	}
	return msg
}

func mapTool(t *mcpsdk.Tool) (registry.ToolSpec, error) {
	name, ok := ToolName(t.Name)
	if !ok {
		return registry.ToolSpec{}, fmt.Errorf("the name cannot be mapped to lowercase words joined by _ or - (got %q)", name)
	}
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return registry.ToolSpec{}, fmt.Errorf("input schema: %w", err)
	}
	spec := registry.ToolSpec{Name: name, Description: t.Description, InputSchema: in}
	if spec.Description == "" {
		spec.Description = t.Title // MCP makes descriptions optional; the registry does not
	}
	if t.OutputSchema != nil {
		if spec.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return registry.ToolSpec{}, fmt.Errorf("output schema: %w", err)
		}
	}
	if a := t.Annotations; a != nil {
		spec.Annotations = registry.Annotations{
			ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint,
			Destructive: a.DestructiveHint != nil && *a.DestructiveHint,
			OpenWorld:   a.OpenWorldHint != nil && *a.OpenWorldHint,
		}
	}
	return spec, nil
}

// noBackend lets registry.Validate check a spec that serves nothing.
type noBackend struct{}

func (noBackend) Acquire() bool { return false }
func (noBackend) Release()      {}
func (noBackend) Invoke(context.Context, string, []byte, int64) ([]byte, error) {
	return nil, nil
}

// resultJSON is what a successful tools/call returns to the registry:
//
//   - structuredContent when the server sent it (it is what an output schema
//     describes);
//   - otherwise, a single text block as a JSON string;
//   - otherwise (several blocks, images, resources), {"content": [...]}, the
//     blocks as MCP has them.
func resultJSON(res *mcpsdk.CallToolResult) ([]byte, error) {
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if len(res.Content) == 1 {
		if t, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			return json.Marshal(t.Text)
		}
	}
	content := res.Content
	if content == nil {
		content = []mcpsdk.Content{}
	}
	return json.Marshal(struct {
		Content []mcpsdk.Content `json:"content"`
	}{content})
}

// errorText is an isError result's message: its text blocks, joined.
func errorText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok && strings.TrimSpace(t.Text) != "" {
			parts = append(parts, strings.TrimSpace(t.Text))
		}
	}
	if len(parts) == 0 {
		return "the tool reported an error without a message"
	}
	return strings.Join(parts, "; ")
}
