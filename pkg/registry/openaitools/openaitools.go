package openaitools

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Tools renders hits as an OpenAI-compatible tools array, in their order.
func Tools(hits []registry.Hit) []openai.Tool {
	out := make([]openai.Tool, 0, len(hits))
	for _, h := range hits {
		out = append(out, Tool(h.Tool))
	}
	return out
}

// Tool renders one tool: its LLM-facing name (skill__tool, which maps back
// without a table), description, and input schema as the parameters.
func Tool(t *registry.Tool) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: t.LLMName, Description: t.Description, Parameters: json.RawMessage(t.InputSchema),
	}}
}

// Qualified maps a name a model called (skill__tool) back to the
// registry's skill.tool; a name of no skill (an engine's own tool, such as
// a team's send_message) is returned as it is.
func Qualified(name string) string {
	if skill, tool, err := registry.SplitName(name); err == nil {
		return registry.Qualified(skill, tool)
	}
	return name
}

// LLMName is Qualified's inverse: the name a model is shown for a logged
// call, so a resumed conversation shows the calls as they were made.
func LLMName(name string) string {
	if skill, tool, err := registry.SplitName(name); err == nil {
		return registry.LLMName(skill, tool)
	}
	return name
}

// Arguments keeps a model's call arguments that are JSON and turns others
// into a JSON string, so that a log holds what the model sent either way.
func Arguments(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
