package flow_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/flow"
)

// A workflow graph: after each turn the run asks which participant speaks
// next, and the edges' CEL conditions decide from the last message.
func ExampleFlow_NextCandidates() {
	f, err := flow.Parse("review-loop", []byte(`
participants:
  - {name: writer, profile: coder}
  - {name: critic, profile: reviewer}
  - {name: runner, tool: coderunner.run_js, arguments: {code: last_by.writer}}
selection:
  mode: graph
  edges:
    - {from: writer, to: critic}
    - {from: critic, to: runner, when: 'text.contains("LGTM")'}
    - {from: critic, to: writer, otherwise: true}
    - {from: runner, to: writer, when: '!result.ok'}
    - {from: runner, to: critic, when: 'result.ok'}
`), "yaml", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	next := func(s flow.State) {
		names, err := f.NextCandidates(s)
		fmt.Println(names, err)
	}
	next(flow.State{})
	next(flow.State{Round: 2, Sender: "critic", Text: "Rename x; otherwise fine."})
	next(flow.State{Round: 4, Sender: "critic", Text: "LGTM"})
	next(flow.State{Round: 5, Sender: "runner", Result: map[string]any{"ok": false, "error": map[string]any{"code": "timeout"}}})

	args, _ := f.ToolArguments("runner", flow.State{LastBy: map[string]string{"writer": "console.log(1)"}})
	fmt.Println(args)
	// Output:
	// [writer] <nil>
	// [writer] <nil>
	// [runner] <nil>
	// [writer] <nil>
	// map[code:console.log(1)]
}

// Loading reports every problem of a file at once, each with its path.
func ExampleParse_errors() {
	_, err := flow.Parse("broken", []byte(`
participants:
  - {name: admin, profile: admin}
  - {name: admin, human: true}
selection:
  mode: graph
  edges:
    - {from: admin, to: coder, when: "round"}
`), "yaml", nil)
	fmt.Println(err)
	// Output:
	// participants[1].name: "admin" is already the name of another participant; names must be unique
	// selection.edges[0].to: no participant named "coder" (participants: admin)
	// selection.edges[0].when: CEL "round": is of type int; a condition must be bool
}
