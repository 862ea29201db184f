package flow_test

import (
	"context"
	"fmt"
	"os"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/flow"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// cannedModel answers each request with the next line of a script.
type cannedModel struct{ lines []string }

func (m *cannedModel) Complete(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	line := m.lines[0]
	m.lines = m.lines[1:]
	return openai.ChatCompletionMessage{Content: line}, openai.Usage{PromptTokens: 30, CompletionTokens: 5}, nil
}

// A run of a two-agent flow: the engine logs every step under the state
// folder before acting on it, and the summary folded from that log says
// who spoke, why the run stopped and what it cost.
func ExampleEngine() {
	dir, _ := os.MkdirTemp("", "flow-example-")
	defer os.RemoveAll(dir)
	profiles, _ := agent.ParseProfiles([]byte(`
default: planner
profiles:
  planner: {system: You plan.}
  critic: {system: You criticise.}
`), "yaml")
	f, err := flow.Parse("plan", []byte(`
participants:
  - {name: planner, profile: planner}
  - {name: critic, profile: critic}
termination: {text_mention: APPROVED}
`), "yaml", profiles)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, _ := runs.Open(runs.Config{Dir: dir})
	defer store.Close()
	eng, _ := flow.NewEngine(flow.EngineConfig{
		Store: store, Registry: registry.New(registry.Config{}), Profiles: profiles, Flows: flow.NewSet(f),
		Model: &cannedModel{lines: []string{"Walk, then take the bus.", "APPROVED: short and cheap."}},
	})
	defer eng.Close()

	run, _ := eng.Start("plan", "Plan a trip across town.")
	<-run.Done()
	sum := run.Summary()
	for _, m := range sum.Transcript {
		fmt.Printf("%s: %s\n", m.Sender, m.Content)
	}
	fmt.Println("stop_reason:", sum.StopReason, "| critic's tokens:", sum.Usage["critic"].Total)
	// Output:
	// planner: Walk, then take the bus.
	// critic: APPROVED: short and cheap.
	// stop_reason: text_mention | critic's tokens: 35
}
