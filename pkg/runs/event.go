package runs

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kind names what an event records. The built-in kinds are single words;
// a package that builds on this log (pkg/team's mailboxes and task board)
// uses kinds with a dot, such as "team.message_sent", so its kinds never
// collide with a built-in one added later. State ignores kinds it does not
// know; their owners fold them themselves.
type Kind string

// The built-in kinds.
const (
	KindStarted        Kind = "started"          // Started: the first event of every run
	KindMessage        Kind = "message"          // Message: a participant said something
	KindSpeakerChoice  Kind = "speaker_choice"   // SpeakerChoice: who speaks next, and why
	KindToolCall       Kind = "tool_call"        // ToolCall: a call about to be made
	KindToolResult     Kind = "tool_result"      // ToolResult: the outcome of a logged call
	KindTransition     Kind = "transition"       // Transition: a graph edge was taken
	KindUsage          Kind = "usage"            // Usage: tokens one model call cost a participant
	KindHumanInputWait Kind = "human_input_wait" // HumanInputWait: the run waits for a human
	KindHumanInput     Kind = "human_input"      // HumanInput: the human answered
	KindStop           Kind = "stop"             // Stop: the run ended; nothing follows
)

// validKind reports whether k is a lowercase word, or two joined by a dot
// (an extension kind). Kinds go into file lines and SSE "event:" fields, so
// they stay plain.
func validKind(k Kind) bool {
	if len(k) == 0 || len(k) > 64 {
		return false
	}
	dots := 0
	prev := byte('.')
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z':
		case (c >= '0' && c <= '9') || c == '_':
			if prev == '.' {
				return false
			}
		case c == '.':
			dots++
			if prev == '.' || dots > 1 {
				return false
			}
		default:
			return false
		}
		prev = c
	}
	return prev != '.'
}

// Extension reports whether k belongs to a package built on this one
// rather than to the run engine itself.
func (k Kind) Extension() bool {
	for i := 0; i < len(k); i++ {
		if k[i] == '.' {
			return true
		}
	}
	return false
}

// Payload is what an event carries. Each built-in kind has its struct;
// another package adds a kind by declaring a struct whose Kind method
// returns a dotted name, and reads it back with Decode.
type Payload interface {
	Kind() Kind
}

// Event is one record of a run's log as it was read back or appended.
type Event struct {
	Seq  uint64          `json:"seq"`  // 1 for the first record, then +1 per record
	Time time.Time       `json:"time"` // when it was appended (UTC)
	Kind Kind            `json:"kind"`
	Data json.RawMessage `json:"data"` // the payload as JSON
}

// Decode reads ev's payload as a P, checking that ev is of P's kind.
func Decode[P Payload](ev Event) (P, error) {
	var p P
	if want := p.Kind(); ev.Kind != want {
		return p, fmt.Errorf("event %d: kind %q, not %q", ev.Seq, ev.Kind, want)
	}
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return p, fmt.Errorf("event %d: decode %s payload: %w", ev.Seq, ev.Kind, err)
	}
	return p, nil
}

// Payload decodes ev's payload into its built-in struct. An extension kind
// is returned as an error naming it; its owner decodes it with Decode.
func (ev Event) Payload() (Payload, error) {
	switch ev.Kind {
	case KindStarted:
		return Decode[Started](ev)
	case KindMessage:
		return Decode[Message](ev)
	case KindSpeakerChoice:
		return Decode[SpeakerChoice](ev)
	case KindToolCall:
		return Decode[ToolCall](ev)
	case KindToolResult:
		return Decode[ToolResult](ev)
	case KindTransition:
		return Decode[Transition](ev)
	case KindUsage:
		return Decode[Usage](ev)
	case KindHumanInputWait:
		return Decode[HumanInputWait](ev)
	case KindHumanInput:
		return Decode[HumanInput](ev)
	case KindStop:
		return Decode[Stop](ev)
	}
	return nil, fmt.Errorf("event %d: kind %q is not a built-in kind", ev.Seq, ev.Kind)
}

// Started opens every run: what it runs and with what. Store.Create writes it.
type Started struct {
	Type  string          `json:"type"`            // the engine that drives the run: "flow", "team", ...
	Name  string          `json:"name,omitempty"`  // the flow or team it runs
	Input json.RawMessage `json:"input,omitempty"` // the request that started it, as the engine wants it back on resume
}

// Message is something a participant said (the human's answers are
// HumanInput, so a transcript tells who typed what).
type Message struct {
	Sender  string `json:"sender"`         // the participant's name
	Role    string `json:"role,omitempty"` // the chat role it had in the model call: "assistant", "user", ...
	Content string `json:"content"`
}

// SpeakerChoice records who speaks next, among which candidates, and why,
// so a wrong pick is visible in the log instead of silent.
type SpeakerChoice struct {
	Speaker    string   `json:"speaker"`
	Mode       string   `json:"mode,omitempty"` // round_robin, selector, graph, ...
	Candidates []string `json:"candidates,omitempty"`
	Reason     string   `json:"reason"`
	Round      int      `json:"round,omitempty"`
}

// ToolCall is logged before the call is made. CallID ties it to its
// ToolResult; an engine makes a call only if the log has no result for its
// id (State.Result).
type ToolCall struct {
	CallID      string          `json:"call_id"`
	Participant string          `json:"participant"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
}

// ToolResult is a logged call's outcome: Result on success, Error (with an
// error code from the API's error shape, when there is one) otherwise.
type ToolResult struct {
	CallID    string          `json:"call_id"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorCode string          `json:"error_code,omitempty"`
}

// Transition records an edge of a workflow graph and the condition that
// chose it.
type Transition struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Condition string `json:"condition,omitempty"`
}

// Usage is what one model call cost a participant; State sums them.
type Usage struct {
	Participant      string `json:"participant"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// HumanInputWait puts the run in the waiting state. Nothing runs while it
// waits; a HumanInput event ends the wait.
type HumanInputWait struct {
	Prompt string `json:"prompt,omitempty"`
	From   string `json:"from,omitempty"` // the participant that handed the turn to the human
}

// HumanInput is the human's answer to a wait.
type HumanInput struct {
	Sender  string `json:"sender,omitempty"` // who typed it, when the API knows; "human" otherwise
	Content string `json:"content"`
}

// Stop ends a run. Reason is one of the Stop* constants or an engine's own
// word; Detail says more for a person.
type Stop struct {
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Stop reasons shared by the engines. An engine may log others.
const (
	StopCompleted  = "completed"  // the work is done (a terminate tool, a final answer)
	StopMention    = "mention"    // a message contained the termination text
	StopMaxRounds  = "max_rounds" // the round limit was reached
	StopTokens     = "token_budget"
	StopTimeLimit  = "time_limit"
	StopExternal   = "external_stop" // stopped through the API or the CLI
	StopStall      = "stall"         // the same speaker, tool and arguments, or the same message, repeated
	StopError      = "error"         // the engine could not go on; Detail says why
	StopHumanInput = "human_input"   // the turn was handed to the human and the flow ends there
)

func (Started) Kind() Kind        { return KindStarted }
func (Message) Kind() Kind        { return KindMessage }
func (SpeakerChoice) Kind() Kind  { return KindSpeakerChoice }
func (ToolCall) Kind() Kind       { return KindToolCall }
func (ToolResult) Kind() Kind     { return KindToolResult }
func (Transition) Kind() Kind     { return KindTransition }
func (Usage) Kind() Kind          { return KindUsage }
func (HumanInputWait) Kind() Kind { return KindHumanInputWait }
func (HumanInput) Kind() Kind     { return KindHumanInput }
func (Stop) Kind() Kind           { return KindStop }
