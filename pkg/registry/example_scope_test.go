package registry_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skillhost/skillhost/pkg/registry"
)

// router is a Backend whose tool "ask" calls the tool named in its
// arguments with the context it was given, as the loader does for a skill's
// nested call (sdk.Call), so the nested call runs under the caller's scope.
type router struct{ reg *registry.Registry }

func (router) Acquire() bool { return true }
func (router) Release()      {}
func (b router) Invoke(ctx context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	var in struct{ Next string }
	_ = json.Unmarshal(args, &in)
	if in.Next == "" {
		return json.Marshal(registry.CallChain(ctx))
	}
	res, err := b.reg.Invoke(ctx, in.Next, []byte(`{}`))
	if err != nil {
		return nil, err
	}
	return res.Result, nil
}

// A nested call sees the chain of calls it runs under; a call back into a
// tool already on the chain is refused, and so is one that the original
// caller's permit refuses.
func ExampleCallChain() {
	reg := registry.New(registry.Config{})
	for _, skill := range []string{"assist", "calc"} {
		_, err := reg.Put(registry.SkillSpec{Name: skill, Version: "1.0.0", Description: skill, Backend: router{reg},
			Tools: []registry.ToolSpec{{Name: "ask", Description: "Ask.", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		if err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	res, _ := reg.Invoke(ctx, "assist.ask", []byte(`{"next":"calc.ask"}`))
	fmt.Println(string(res.Result))

	_, err := reg.Invoke(ctx, "assist.ask", []byte(`{"next":"assist.ask"}`))
	fmt.Println(err)

	onlyAssist := func(t *registry.Tool) error {
		if t.Skill != "assist" {
			return registry.Errorf(registry.CodeForbidden, "this caller may use assist only")
		}
		return nil
	}
	_, err = reg.InvokePermitted(ctx, "assist.ask", []byte(`{"next":"calc.ask"}`), onlyAssist)
	fmt.Println(err)
	// Output:
	// ["assist.ask","calc.ask"]
	// forbidden: call cycle: assist.ask calls assist.ask, which is already on its chain (assist.ask → assist.ask)
	// forbidden: assist.ask may not call calc.ask: the scope of the call to assist.ask refuses it (this caller may use assist only)
}
