package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Keys skillhost puts under _meta, namespaced as MCP asks of implementations.
const (
	MetaSkill      = "io.skillhost/skill"       // tool and result: the serving skill
	MetaVersion    = "io.skillhost/version"     // tool and result: the serving version
	MetaTags       = "io.skillhost/tags"        // tool: the tool's and its skill's tags
	MetaLLMName    = "io.skillhost/llm_name"    // tool: skill__tool, the OpenAI-safe name
	MetaAvailable  = "io.skillhost/available"   // tool: false while its skill restarts (only with ShowUnavailable)
	MetaWrapped    = "io.skillhost/wrapped"     // tool: true when structuredContent wraps a non-object result as {"result": ...}
	MetaDurationMS = "io.skillhost/duration_ms" // result: how long the call took
	MetaError      = "io.skillhost/error"       // error result: the registry error {code, message, retryable, details}
)

// unavailablePrefix starts the description of a listed tool whose skill is
// restarting (only with Config.ShowUnavailable).
const unavailablePrefix = "[unavailable: its skill is restarting after a crash; calls fail until it is back] "

// mappedTool is a registry tool as MCP sees it, in both availability states.
// It is computed once per registry tool (which is immutable) and cached.
type mappedTool struct {
	avail, unavail     *mcpsdk.Tool
	availFP, unavailFP string // fingerprints: the JSON of each form
	wrapped            bool   // structuredContent is {"result": value}
}

func (m *mappedTool) form(available bool) (*mcpsdk.Tool, string) {
	if available {
		return m.avail, m.availFP
	}
	return m.unavail, m.unavailFP
}

// mapTool converts a registry tool to its MCP definitions.
func mapTool(t *registry.Tool) *mappedTool {
	tool := &mcpsdk.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: normalizeObjectSchema(t.InputSchema),
		Annotations: mapAnnotations(t.Annotations),
		Meta: mcpsdk.Meta{
			MetaSkill: t.Skill, MetaVersion: t.Version, MetaLLMName: t.LLMName, MetaTags: nonNil(t.Tags),
		},
	}
	m := &mappedTool{}
	if len(bytes.TrimSpace(t.OutputSchema)) > 0 {
		var out json.RawMessage
		out, m.wrapped = outputSchema(t.OutputSchema)
		tool.OutputSchema = out
		if m.wrapped {
			tool.Meta[MetaWrapped] = true
		}
	}
	m.avail = tool
	un := *tool
	un.Meta = make(mcpsdk.Meta, len(tool.Meta)+1)
	for k, v := range tool.Meta {
		un.Meta[k] = v
	}
	un.Meta[MetaAvailable] = false
	un.Description = unavailablePrefix + tool.Description
	m.unavail = &un
	m.availFP, m.unavailFP = fingerprint(m.avail), fingerprint(m.unavail)
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fingerprint(t *mcpsdk.Tool) string {
	b, err := json.Marshal(t)
	if err != nil {
		// Cannot happen for the values mapTool builds; a unique string
		// still makes the sync re-add the tool rather than skip it.
		return "unmarshalable: " + err.Error()
	}
	return string(b)
}

// mapAnnotations maps skillhost's hints to MCP's. readOnlyHint and
// idempotentHint are always sent (false is MCP's default too). MCP's
// defaults for destructiveHint and openWorldHint are true, the cautious
// reading of a tool nobody described, so they are sent only for a tool that
// carries at least one annotation: its author described its behaviour, and
// false then means "no". A read-only tool is never destructive.
func mapAnnotations(a registry.Annotations) *mcpsdk.ToolAnnotations {
	out := &mcpsdk.ToolAnnotations{ReadOnlyHint: a.ReadOnly, IdempotentHint: a.Idempotent}
	if a != (registry.Annotations{}) {
		destructive, openWorld := a.Destructive && !a.ReadOnly, a.OpenWorld
		out.DestructiveHint, out.OpenWorldHint = &destructive, &openWorld
	}
	return out
}

// decodeSchema decodes a schema keeping numbers exact.
func decodeSchema(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func encode(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

// normalizeObjectSchema rewrites boolean subschemas directly under
// "properties" (true → {}, false → {"not": {}}): JSON Schema allows them,
// but some MCP clients (the TypeScript SDK among them) reject a tool list
// whose property schemas are not objects, and one such tool would cost the
// client every tool. The registry has already checked that the schema is an
// object schema that compiles.
func normalizeObjectSchema(raw json.RawMessage) json.RawMessage {
	v, err := decodeSchema(raw)
	if err != nil {
		return raw
	}
	m, ok := v.(map[string]any)
	if !ok {
		return raw
	}
	if !normalizeProperties(m) {
		return raw
	}
	return encode(m)
}

func normalizeProperties(m map[string]any) (changed bool) {
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return false
	}
	for k, p := range props {
		if b, ok := p.(bool); ok {
			props[k] = boolSchema(b)
			changed = true
		}
	}
	return changed
}

func boolSchema(b bool) map[string]any {
	if b {
		return map[string]any{}
	}
	return map[string]any{"not": map[string]any{}}
}

// outputSchema returns the MCP output schema for a tool's output schema.
// MCP (before 2026-07-28) and its clients require an object schema there and
// an object in structuredContent; a tool whose result is a string, number,
// array or anything not declared "type": "object" therefore gets the
// wrapper {"type": "object", "properties": {"result": S}, "required":
// ["result"]} and its structuredContent is {"result": value}. Top-level
// $defs and definitions move to the wrapper so that "#/$defs/..." references
// still resolve.
func outputSchema(raw json.RawMessage) (schema json.RawMessage, wrapped bool) {
	v, err := decodeSchema(raw)
	if err != nil {
		return nil, false // the registry compiled it; cannot happen
	}
	var inner any = v
	wrapper := map[string]any{"type": "object", "required": []string{"result"}, "additionalProperties": false}
	switch s := v.(type) {
	case map[string]any:
		if s["type"] == "object" {
			normalizeProperties(s)
			return encode(s), false
		}
		if _, hasID := s["$id"]; !hasID {
			for _, k := range []string{"$defs", "definitions"} {
				if d, ok := s[k]; ok {
					wrapper[k] = d
					delete(s, k)
				}
			}
		}
		if sch, ok := s["$schema"]; ok {
			wrapper["$schema"] = sch
			delete(s, "$schema")
		}
	case bool:
		inner = boolSchema(s)
	}
	wrapper["properties"] = map[string]any{"result": inner}
	return encode(wrapper), true
}

// resultFor renders a successful call. The text is the result's JSON (or,
// for a string result, the string itself, which reads better to a model);
// structuredContent is the result when it is an object, or {"result": value}
// for a tool whose output schema was wrapped.
func resultFor(res *registry.Result, wrapped bool) *mcpsdk.CallToolResult {
	raw := bytes.TrimSpace(res.Result)
	out := &mcpsdk.CallToolResult{
		Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: renderText(raw)}},
		Meta: mcpsdk.Meta{
			MetaSkill: res.Skill, MetaVersion: res.Version,
			MetaDurationMS: float64(res.Duration.Microseconds()) / 1000,
		},
	}
	switch {
	case wrapped:
		out.StructuredContent = map[string]json.RawMessage{"result": json.RawMessage(raw)}
	case len(raw) > 0 && raw[0] == '{':
		out.StructuredContent = json.RawMessage(raw)
	}
	return out
}

func renderText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// errorResult is a failed call as a tool result: isError, the message as
// text, the whole error under _meta.
func errorResult(e *registry.Error) *mcpsdk.CallToolResult {
	text := e.Error()
	if e.Retryable && !strings.Contains(strings.ToLower(e.Message), "retry") {
		text += " (retryable)"
	}
	return &mcpsdk.CallToolResult{
		IsError: true,
		Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}},
		Meta:    mcpsdk.Meta{MetaError: e},
	}
}

// wireError is an error MCP wants as a JSON-RPC error (unknown tool, a tool
// outside the endpoint's filter): invalid params, the registry error as data.
func wireError(e *registry.Error) *jsonrpc.Error {
	data, _ := json.Marshal(e)
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message, Data: data}
}
