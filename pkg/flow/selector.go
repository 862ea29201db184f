package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/runs"
)

// selectFunction is the function the selector's model must call.
const selectFunction = "select_speaker"

// selectorHistory bounds the messages the selector is shown.
const selectorHistory = 20

// selectSpeaker asks the selector's model to pick among cands through a
// function call whose speaker argument is an enum of cands. An attempt
// fails when the model calls nothing or names someone else; after
// MaxAttempts failures the flow's on_failure rule applies, and the choice
// (or the stop) says so.
func (d *driver) selectSpeaker(ctx context.Context, st State, cands []string) (speaker, why string, err error) {
	sel := d.f.Selection.Selector
	prof, ok := d.e.cfg.Profiles.Get(sel.Profile)
	if !ok {
		return "", "", d.stop(runs.StopError, fmt.Sprintf("the selector's agent profile %q is not loaded", sel.Profile))
	}
	var roster strings.Builder
	for _, name := range d.f.Names() {
		p, _ := d.f.Participant(name)
		fmt.Fprintf(&roster, "- %s: %s\n", name, p.Description)
	}
	sys := strings.TrimSpace(prof.System)
	if sys != "" {
		sys += "\n\n"
	}
	sys += "You choose who speaks next in a conversation between these participants:\n" + roster.String()
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: sys},
		{Role: openai.ChatMessageRoleUser, Content: d.st.task},
	}
	from := max(0, len(d.st.msgs)-selectorHistory)
	for _, m := range d.st.msgs[from:] {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: m.sender, Content: m.sender + ": " + m.content})
	}
	ask := fmt.Sprintf("Read the conversation above. Then call %s with who speaks next, one of: %s, and a short reason.",
		selectFunction, strings.Join(cands, ", "))
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: ask})
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"speaker": map[string]any{"type": "string", "enum": cands, "description": "Who speaks next."},
			"reason":  map[string]any{"type": "string", "description": "Why, in one sentence."},
		},
		"required": []string{"speaker", "reason"},
	})
	req := openai.ChatCompletionRequest{
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: selectFunction, Description: "Name the participant who speaks next.", Parameters: json.RawMessage(params)}}},
		ToolChoice: openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: selectFunction}},
	}
	label := SelectorParticipant(sel.Profile)
	var failures []string
	for attempt := 1; attempt <= sel.MaxAttempts; attempt++ {
		req.Messages = msgs
		msg, err := d.complete(ctx, label, prof, req)
		if err != nil {
			return "", "", err
		}
		name, reason, problem := parseSelection(msg, cands)
		if problem == "" {
			if reason == "" {
				reason = "(the selector gave no reason)"
			}
			return name, "selector: " + reason, nil
		}
		failures = append(failures, fmt.Sprintf("attempt %d: %s", attempt, problem))
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf("That was not a valid choice: %s. %s", problem, ask)})
	}
	what := fmt.Sprintf("the selector's model named no valid speaker in %d attempts (%s)", sel.MaxAttempts, strings.Join(failures, "; "))
	switch sel.OnFailure {
	case FailHuman:
		return d.f.Human(), what + "; on_failure human gives the turn to the human", nil
	case FailFirst:
		return cands[0], what + "; on_failure first gives the turn to the first candidate", nil
	default:
		return "", "", d.stop(ReasonSelectorFailed, what+"; on_failure stop ends the run")
	}
}

// SelectorParticipant is the name the selector's usage is logged under:
// not a valid participant name, so it never merges with one.
func SelectorParticipant(profile string) string { return "selector:" + profile }

// parseSelection reads the model's select_speaker call.
func parseSelection(msg openai.ChatCompletionMessage, cands []string) (name, reason, problem string) {
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name != selectFunction {
			continue
		}
		var args struct {
			Speaker string `json:"speaker"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
			return "", "", fmt.Sprintf("the arguments of %s are not a JSON object: %v", selectFunction, err)
		}
		if !slices.Contains(cands, args.Speaker) {
			return "", "", fmt.Sprintf("it named %q, who is not among the candidates %s", args.Speaker, strings.Join(cands, ", "))
		}
		return args.Speaker, strings.TrimSpace(args.Reason), ""
	}
	if len(msg.ToolCalls) > 0 {
		return "", "", fmt.Sprintf("it called %s instead of %s", msg.ToolCalls[0].Function.Name, selectFunction)
	}
	return "", "", "it answered in text and called no function"
}
