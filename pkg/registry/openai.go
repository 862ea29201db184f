package registry

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// OpenAITools renders hits as an OpenAI-compatible tools array: LLM-facing
// names (skill__tool, which map back without a table) and the input schema as
// the parameters.
func OpenAITools(hits []Hit) []openai.Tool {
	out := make([]openai.Tool, 0, len(hits))
	for _, h := range hits {
		out = append(out, OpenAITool(h.Tool))
	}
	return out
}

// OpenAITool renders one tool.
func OpenAITool(t *Tool) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: t.LLMName, Description: t.Description, Parameters: json.RawMessage(t.InputSchema),
	}}
}
