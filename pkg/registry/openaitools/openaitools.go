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
