package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
)

type echo struct{}

func (echo) Acquire() bool { return true }
func (echo) Release()      {}
func (echo) Invoke(_ context.Context, _ string, args []byte, _ int64) ([]byte, error) {
	return args, nil
}

func ExampleTools() {
	reg := registry.New(registry.Config{})
	reg.Put(registry.SkillSpec{Name: "calc", Version: "1.0.0", Backend: echo{}, Tools: []registry.ToolSpec{{
		Name: "add", Description: "Add two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
	}}})
	hits := reg.Snapshot().Search(registry.Query{Text: "add numbers"})
	b, _ := json.Marshal(openaitools.Tools(hits))
	fmt.Println(string(b))
	// Output:
	// [{"function":{"name":"calc__add","description":"Add two numbers.","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}},"type":"function"}]
}
