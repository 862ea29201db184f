package flow

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
)

// Mode is how the next speaker is chosen.
type Mode string

const (
	// ModeRoundRobin gives the turn to each participant in file order.
	ModeRoundRobin Mode = "round_robin"
	// ModeSelector asks an admin model to pick among the candidates
	// through a function call whose argument is an enum of their names.
	// With edges, the graph narrows the candidates first.
	ModeSelector Mode = "selector"
	// ModeGraph follows the workflow graph. Without a selector it is pure
	// workflow mode: exactly one edge must hold after each turn. With a
	// selector, several holding edges are handed to it.
	ModeGraph Mode = "graph"
)

// FailureRule is what happens when the selector's model fails to pick a
// valid speaker MaxAttempts times in a row. Every rule is logged as such by
// the run; none is a silent default.
type FailureRule string

const (
	// FailStop ends the run with stop reason selector_failed (the default).
	FailStop FailureRule = "stop"
	// FailHuman hands the turn to the flow's human participant.
	FailHuman FailureRule = "human"
	// FailFirst gives the turn to the first candidate in file order.
	FailFirst FailureRule = "first"
)

// Kind is what sort of participant answers.
type Kind string

const (
	KindAgent Kind = "agent" // an agent profile with its own prompt and tools
	KindTool  Kind = "tool"  // a tool agent: calls one hosted tool on the conversation
	KindHuman Kind = "human" // the person; the run waits for their message
)

// Flow is one validated flow file. Its exported fields are as written in
// the file with defaults applied; it is immutable after loading and safe
// for concurrent use.
type Flow struct {
	Name         string         `json:"-"` // the file's base name
	Description  string         `json:"description,omitempty"`
	Participants []*Participant `json:"participants"`
	// Start speaks first; the first participant when empty.
	Start       string      `json:"start,omitempty"`
	Selection   Selection   `json:"selection"`
	Termination *Condition  `json:"termination,omitempty"`
	Stall       *StallGuard `json:"stall,omitempty"`

	byName map[string]*Participant
	edges  map[string][]*Edge // outgoing edges by source, in file order
}

// Participant is one voice in the conversation. Exactly one of Profile,
// Tool and Human is set.
type Participant struct {
	Name string `json:"name"`
	// Description tells the selector's model what this participant is for.
	Description string `json:"description,omitempty"`
	// Profile names the agent profile that answers (see docs/agent.md).
	Profile string `json:"profile,omitempty"`
	// Tool is the qualified name (skill.tool) of the hosted tool a tool
	// agent calls; whether it exists is checked when the run calls it,
	// since skills come and go with hot reload.
	Tool string `json:"tool,omitempty"`
	// Arguments maps each argument of Tool to a CEL expression over the
	// run state, for example {"code": "text"}.
	Arguments map[string]string `json:"arguments,omitempty"`
	// Human marks the person taking part; a flow has at most one.
	Human bool `json:"human,omitempty"`
	// Reply, for an agent, is the function it must answer with.
	Reply *Reply `json:"reply,omitempty"`
	// Context is what this participant is shown of the conversation.
	Context ContextPolicy `json:"context,omitzero"`

	args map[string]cel.Program
}

// Kind says which of agent, tool agent or human p is.
func (p *Participant) Kind() Kind {
	switch {
	case p.Human:
		return KindHuman
	case p.Tool != "":
		return KindTool
	default:
		return KindAgent
	}
}

// Selection says how the next speaker is chosen.
type Selection struct {
	Mode     Mode      `json:"mode,omitempty"` // round_robin (default), selector or graph
	Selector *Selector `json:"selector,omitempty"`
	Edges    []*Edge   `json:"edges,omitempty"` // the workflow graph
}

// Selector is the admin model that picks the next speaker.
type Selector struct {
	// Profile is the agent profile whose model and system prompt pick.
	Profile string `json:"profile"`
	// MaxAttempts is how many model calls may fail to name a valid
	// candidate before OnFailure applies; default 3.
	MaxAttempts int         `json:"max_attempts,omitempty"`
	OnFailure   FailureRule `json:"on_failure,omitempty"` // stop (default), human or first
	// AllowRepeatSpeaker lets the last speaker be picked again when no
	// graph narrows the choice; default true, as in AutoGen's GroupChat.
	AllowRepeatSpeaker *bool `json:"allow_repeat_speaker,omitempty"`
}

// Edge is a transition of the workflow graph.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// When is a CEL condition over the run state; the edge always holds
	// when it is empty.
	When string `json:"when,omitempty"`
	// Otherwise marks the edge taken when no other edge from From holds;
	// at most one per source, and it has no When.
	Otherwise bool `json:"otherwise,omitempty"`

	prog cel.Program
}

// StallGuard ends (or hands to the human) a run that repeats itself: the
// same speaker calling the same tool with the same arguments, or the same
// message, within Window turns.
type StallGuard struct {
	Window int         `json:"window,omitempty"` // turns looked back over; default 4
	Action StallAction `json:"action,omitempty"` // stop (default) or human
}

// StallAction is what the stall guard does.
type StallAction string

const (
	StallStop  StallAction = "stop"  // end the run with stop reason stalled
	StallHuman StallAction = "human" // hand the turn to the human participant
)

// Defaults applied at load to fields left zero.
const (
	DefaultMaxRounds   = 10
	DefaultMaxAttempts = 3
	DefaultStallWindow = 4
	// CostLimit bounds one evaluation of a CEL expression (cel.CostLimit
	// units: roughly one per operation, more for string work on long text).
	CostLimit = 1_000_000
	// EvalTimeout bounds the wall-clock time of one evaluation; see eval.
	EvalTimeout = 250 * time.Millisecond
)

// Participant returns the named participant.
func (f *Flow) Participant(name string) (*Participant, bool) {
	p, ok := f.byName[name]
	return p, ok
}

// Human returns the human participant's name, "" when the flow has none.
func (f *Flow) Human() string {
	for _, p := range f.Participants {
		if p.Human {
			return p.Name
		}
	}
	return ""
}

// Names returns the participants' names in file order.
func (f *Flow) Names() []string {
	out := make([]string, 0, len(f.Participants))
	for _, p := range f.Participants {
		if p != nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// Duration is a time.Duration written as a Go duration string ("90s", "10m").
type Duration time.Duration

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"10m\", not %s", b)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration %q: want a number and a unit such as \"90s\" or \"10m\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
