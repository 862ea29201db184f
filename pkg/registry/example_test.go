package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillhost/skillhost/pkg/registry"
)

// textkit is an in-process Backend: the registry needs no process to route
// a call, only something that takes a lease and answers. The loader's
// instances are Backends of the same kind, over gRPC.
type textkit struct{}

func (textkit) Acquire() bool { return true } // a draining instance says false: the call goes to the new one
func (textkit) Release()      {}

func (textkit) Invoke(_ context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	switch tool {
	case "upper":
		return json.Marshal(map[string]string{"text": strings.ToUpper(in.Text)})
	default:
		return json.Marshal(map[string]int{"words": len(strings.Fields(in.Text))})
	}
}

const textSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

// Example shows the registry's life in one skill: Put publishes a version's
// tools, Invoke validates and routes a call, and a Snapshot's Search ranks
// tools for a request's text.
func Example() {
	reg := registry.New(registry.Config{})
	if _, err := reg.Put(registry.SkillSpec{
		Name: "textkit", Version: "1.0.0", Description: "Text helpers.", Backend: textkit{},
		Tools: []registry.ToolSpec{
			{Name: "upper", Description: "Turn text into upper case letters.", InputSchema: json.RawMessage(textSchema)},
			{Name: "count", Description: "Count the words in a text.", InputSchema: json.RawMessage(textSchema)},
		},
	}); err != nil {
		fmt.Println(err)
		return
	}

	// The qualified name and the LLM-facing name reach the same tool.
	for _, name := range []string{"textkit.upper", "textkit__count"} {
		res, err := reg.Invoke(context.Background(), name, []byte(`{"text":"hot swap loses no call"}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Tool, res.Version, string(res.Result))
	}

	// Arguments that break the schema never reach the backend.
	_, err := reg.Invoke(context.Background(), "textkit.upper", []byte(`{"txt":"typo"}`))
	fmt.Println(registry.CodeOf(err))

	// Search ranks the tools of the current snapshot for a request's text.
	for _, h := range reg.Snapshot().Search(registry.Query{Text: "how many words", Limit: 1}) {
		fmt.Println(h.Tool.Name, h.Tool.LLMName)
	}
	// Output:
	// textkit.upper 1.0.0 {"text":"HOT SWAP LOSES NO CALL"}
	// textkit.count 1.0.0 {"words":5}
	// invalid_arguments
	// textkit.count textkit__count
}
