package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Discovery is how an endpoint discloses its tools.
type Discovery string

const (
	// DiscoveryOff lists every tool the endpoint's filter passes (the
	// default).
	DiscoveryOff Discovery = ""
	// DiscoverySearch starts each session with three tools, find_tools,
	// load_tools and call_tool, for clients with too many tools to list:
	// the model searches the registry and loads (or calls) what it found,
	// and loaded tools join that session's list alone.
	DiscoverySearch Discovery = "search"
)

// ParamDiscovery is the query parameter that selects the discovery mode.
const ParamDiscovery = "discovery"

// ParseDiscovery reads the discovery mode: "" or "off" for none, "search".
func ParseDiscovery(s string) (Discovery, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "off", "none":
		return DiscoveryOff, nil
	case string(DiscoverySearch):
		return DiscoverySearch, nil
	}
	return DiscoveryOff, registry.Errorf(registry.CodeBadRequest, "discovery %q is not a mode (want \"search\" or \"off\")", s)
}

// Endpoint is what one MCP endpoint offers: the tools its filter passes,
// disclosed all at once or through search.
type Endpoint struct {
	Filter    Filter
	Discovery Discovery
}

// ParseEndpoint reads an endpoint from query parameters: the filter
// (ParseFilter) and discovery. Every problem is reported at once.
func ParseEndpoint(q url.Values) (Endpoint, error) {
	f, ferr := ParseFilter(q)
	d, derr := ParseDiscovery(q.Get(ParamDiscovery))
	if err := errors.Join(ferr, derr); err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Filter: f, Discovery: d}, nil
}

// Query is the endpoint as query parameters, the inverse of ParseEndpoint.
func (e Endpoint) Query() url.Values {
	q := e.Filter.Query()
	if e.Discovery != DiscoveryOff {
		q.Set(ParamDiscovery, string(e.Discovery))
	}
	return q
}

// The discovery tools. Their names have no dot, so they never collide with
// a registry tool (skill.tool).
const (
	toolFind = "find_tools"
	toolLoad = "load_tools"
	toolCall = "call_tool"
)

// DefaultMaxLoaded is how many tools one discovery session may load unless
// Config.MaxLoaded says otherwise: enough for a task, few enough that the
// list stays the short one the mode is for.
const DefaultMaxLoaded = 32

// maxFind caps find_tools' limit.
const maxFind = 20

type findArgs struct {
	Query string   `json:"query,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Limit int      `json:"limit,omitempty"`
}

type foundTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Tags        []string        `json:"tags,omitempty"`
	Loaded      bool            `json:"loaded,omitempty"`
}

type findResult struct {
	Tools []foundTool `json:"tools"`
}

type loadArgs struct {
	Names []string `json:"names"`
}

type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

type loadResult struct {
	Loaded   []string `json:"loaded"`
	Refused  []string `json:"refused,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	Capacity int      `json:"capacity"`
}

// discoveryTools are the definitions of the three tools; loadable says
// whether load_tools is offered (a sessionless endpoint has no session to
// load into).
func discoveryTools(loadable bool) map[string]wantTool {
	ro := &mcpsdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	defs := []*mcpsdk.Tool{
		{Name: toolFind, Annotations: ro, InputSchema: findSchema,
			Description: "Search this server's tools by what they do (free text) and tags. Returns the best matches with their input schemas. " +
				"Then call one with call_tool" + ifLoad(loadable, ", or load_tools to add them to your tool list") + "."},
		{Name: toolCall, InputSchema: callSchema,
			Description: "Call a tool that find_tools returned, by name, with arguments matching its inputSchema."},
	}
	if loadable {
		defs = append(defs, &mcpsdk.Tool{Name: toolLoad, Annotations: ro, InputSchema: loadSchema,
			Description: "Add tools that find_tools returned to this session's tool list, so they can be called directly. The list changes (notifications/tools/list_changed)."})
	}
	out := map[string]wantTool{}
	for _, d := range defs {
		out[d.Name] = wantTool{d, fingerprint(d)}
	}
	return out
}

func ifLoad(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// The discovery tools' input schemas.
var (
	findSchema = encode(map[string]any{"type": "object", "properties": map[string]any{
		"query": map[string]any{"type": "string", "description": "what the tool should do, in words"},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "only tools carrying any of these tags"},
		"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxFind, "description": "how many tools to return (default 5)"},
	}})
	loadSchema = encode(map[string]any{"type": "object", "required": []string{"names"}, "properties": map[string]any{
		"names": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "description": "tool names as find_tools returned them"},
	}})
	callSchema = encode(map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
		"name":      map[string]any{"type": "string", "description": "the tool's name as find_tools returned it"},
		"arguments": map[string]any{"type": "object", "description": "the tool's arguments, matching its inputSchema"},
	}})
)

// discoveryHandler answers the three tools of v.
func (v *view) discoveryHandler(name string) mcpsdk.ToolHandler {
	switch name {
	case toolFind:
		return v.find
	case toolLoad:
		return v.load
	default:
		return v.callNamed
	}
}

func decodeArgs(raw json.RawMessage, into any) *registry.Error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return registry.Errorf(registry.CodeInvalidArguments, "arguments do not decode: %v", err)
	}
	return nil
}

func structured(v any) *mcpsdk.CallToolResult {
	raw := encode(v)
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: string(raw)}}, StructuredContent: json.RawMessage(raw)}
}

// find ranks the tools the endpoint's filter passes, with the registry's
// prefilter. The request's tags narrow the filter, never widen it.
func (v *view) find(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	var a findArgs
	if e := decodeArgs(req.Params.Arguments, &a); e != nil {
		return errorResult(e), nil
	}
	limit := a.Limit
	if limit <= 0 {
		limit = registry.DefaultLimit
	}
	limit = min(limit, maxFind)
	narrow, problems := Filter{Tags: a.Tags}.Normalize()
	if err := problems.Err(); err != nil {
		return errorResult(registry.AsError(err)), nil
	}
	q := registry.Query{Text: a.Query, Filter: v.filter, Limit: limit}
	postTags := false
	if len(narrow.Tags) > 0 {
		if len(v.filter.Tags) == 0 {
			q.Tags = narrow.Tags // the ranking boosts tag matches
		} else {
			q.Limit, postTags = registry.MaxLimit, true
		}
	}
	out := findResult{Tools: []foundTool{}}
	for _, h := range v.s.reg.Snapshot().Search(q) {
		t := h.Tool
		// The endpoint's filter bounds everything, whatever the search did.
		if !v.filter.Match(t) || !t.Available() || (postTags && !narrow.Match(t)) {
			continue
		}
		schema, _ := v.s.mapping(t).avail.InputSchema.(json.RawMessage)
		out.Tools = append(out.Tools, foundTool{Name: t.Name, Description: t.Description, InputSchema: schema, Tags: nonNil(t.Tags), Loaded: v.isLoaded(t.Name)})
		if len(out.Tools) == limit {
			break
		}
	}
	return structured(out), nil
}

func (v *view) isLoaded(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.loaded[name]
}

// load adds tools to this session's list, within the filter and the cap.
func (v *view) load(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	var a loadArgs
	if e := decodeArgs(req.Params.Arguments, &a); e != nil {
		return errorResult(e), nil
	}
	if len(a.Names) == 0 {
		return errorResult(registry.Errorf(registry.CodeInvalidArguments, "names is empty: name at least one tool find_tools returned")), nil
	}
	snap := v.s.reg.Snapshot()
	res := loadResult{Loaded: []string{}}
	v.mu.Lock()
	for _, name := range a.Names {
		t, ok := snap.Tool(name)
		switch {
		case !ok || !v.filter.Match(t):
			res.Refused, res.Reasons = append(res.Refused, name), append(res.Reasons, "no such tool on this endpoint")
		case v.loaded[t.Name]:
			res.Loaded = append(res.Loaded, t.Name)
		case len(v.loaded) >= v.s.cfg.MaxLoaded:
			res.Refused, res.Reasons = append(res.Refused, name), append(res.Reasons, fmt.Sprintf("this session already loaded %d tools, the cap", v.s.cfg.MaxLoaded))
		default:
			v.loaded[t.Name] = true
			res.Loaded = append(res.Loaded, t.Name)
		}
	}
	res.Capacity = v.s.cfg.MaxLoaded - len(v.loaded)
	v.synced = false // the wanted set changed: the next sync mirrors it
	v.mu.Unlock()
	v.sync()
	out := structured(res)
	if len(res.Loaded) == 0 {
		out.IsError = true
	}
	return out, nil
}

// callNamed calls a tool by name: the ordinary call path, under the
// endpoint's filter.
func (v *view) callNamed(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	var a callArgs
	if e := decodeArgs(req.Params.Arguments, &a); e != nil {
		return errorResult(e), nil
	}
	if a.Name == "" || slices.Contains([]string{toolFind, toolLoad, toolCall}, a.Name) {
		return errorResult(registry.Errorf(registry.CodeInvalidArguments, "name %q is not a tool find_tools returns", a.Name)), nil
	}
	res, err := v.s.invoke(ctx, v, a.Name, a.Arguments)
	if err != nil {
		// Inside call_tool an unknown tool is the model's mistake to read
		// and correct, not a protocol error.
		return errorResult(registry.Errorf(registry.CodeUnknownTool, "%s", err.Error()).With("tool", a.Name)), nil
	}
	return res, nil
}
