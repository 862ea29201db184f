package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
	"github.com/skillhost/skillhost/pkg/runs"
)

// terminateTool is the function the run offers agents when the flow ends
// on terminate_tool. A registry tool's LLM name always holds "__", so it
// cannot collide with one.
const terminateTool = "terminate"

var terminateDef = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:        terminateTool,
	Description: "End the whole conversation: call this when the task is done.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation can end."}}}`),
}}

// usesTerminateTool reports whether c has a terminate_tool leaf.
func (c *Condition) usesTerminateTool() bool {
	if c == nil {
		return false
	}
	if c.TerminateTool {
		return true
	}
	for _, sub := range append(append([]*Condition(nil), c.Any...), c.All...) {
		if sub.usesTerminateTool() {
			return true
		}
	}
	return false
}

// agentTurn lets an agent participant answer: model calls, with tool
// calls between them, until it answers in text (or, with a reply, with
// its reply function). Every tool result is logged before the next model
// call; on resume, the open turn's logged calls and results are replayed
// into the conversation and no logged call is made again.
func (d *driver) agentTurn(ctx context.Context, p *Participant) error {
	prof, ok := d.e.cfg.Profiles.Get(p.Profile)
	if !ok {
		return d.stop(runs.StopError, fmt.Sprintf("participant %s: no agent profile named %q is loaded", p.Name, p.Profile))
	}
	msgs := d.contextFor(p, prof)
	var (
		tools   []openai.Tool
		choice  any
		offered = map[string]bool{} // qualified names
	)
	if p.Reply != nil {
		tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: p.Reply.Function, Description: p.Reply.Description, Parameters: p.Reply.Parameters}}}
		choice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: p.Reply.Function}}
	} else {
		tools = d.toolsFor(prof, offered)
		if d.f.Termination.usesTerminateTool() {
			tools = append(tools, terminateDef)
		}
	}
	permit := func(t *registry.Tool) error {
		if !offered[t.Name] || (prof.Mode != agent.ModeFull && !t.Annotations.ReadOnly) {
			return registry.Errorf(registry.CodeForbidden, "profile %s of participant %s may not call %s", prof.Name, p.Name, t.Name)
		}
		return nil
	}

	// Resume: what the open turn already did, as the model saw it.
	terminated := false
	for _, c := range d.st.calls {
		res, ok := d.st.results[c.CallID]
		if !ok {
			var err error
			if res, err = d.callFor(ctx, c, offered, permit); err != nil {
				return err
			}
		}
		terminated = terminated || c.Tool == terminateTool
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant,
			ToolCalls: []openai.ToolCall{{ID: c.CallID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: openaitools.LLMName(c.Tool), Arguments: string(c.Arguments)}}}},
			toolResultMessage(c.CallID, res))
	}
	if terminated {
		return d.log(runs.Message{Sender: p.Name, Role: openai.ChatMessageRoleAssistant, Content: "(called terminate)"})
	}

	failures := 0
	for {
		if p.Reply == nil && d.st.steps >= prof.MaxSteps {
			return d.log(runs.Message{Sender: p.Name, Role: openai.ChatMessageRoleAssistant,
				Content: fmt.Sprintf("(%s reached its limit of %d model calls in one turn without an answer)", p.Name, prof.MaxSteps)})
		}
		msg, err := d.complete(ctx, p.Name, prof, openai.ChatCompletionRequest{Messages: msgs, Tools: tools, ToolChoice: choice})
		if err != nil {
			return err
		}
		if p.Reply != nil {
			args, problem := replyCall(msg, p.Reply)
			if problem == "" {
				return d.log(runs.Message{Sender: p.Name, Role: roleStructured + "reply", Content: canonical(args)})
			}
			failures++
			if failures >= p.Reply.MaxAttempts {
				return d.stop(ReasonReplyFailed, fmt.Sprintf("%s did not answer with a valid call of %s in %d model calls; last: %s",
					p.Name, p.Reply.Function, failures, problem))
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
					Content: fmt.Sprintf("That answer was not accepted: %s. Answer by calling the function %s.", problem, p.Reply.Function)})
			continue
		}
		if len(msg.ToolCalls) == 0 {
			return d.log(runs.Message{Sender: p.Name, Role: openai.ChatMessageRoleAssistant, Content: msg.Content})
		}
		assistant := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content}
		var calls []runs.ToolCall
		for _, tc := range msg.ToolCalls {
			c := runs.ToolCall{CallID: d.nextCallID(), Participant: p.Name, Tool: openaitools.Qualified(tc.Function.Name), Arguments: openaitools.Arguments(tc.Function.Arguments)}
			if err := d.log(c); err != nil {
				return err
			}
			calls = append(calls, c)
			assistant.ToolCalls = append(assistant.ToolCalls, openai.ToolCall{ID: c.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		msgs = append(msgs, assistant)
		for _, c := range calls {
			res, err := d.callFor(ctx, c, offered, permit)
			if err != nil {
				return err
			}
			terminated = terminated || c.Tool == terminateTool
			msgs = append(msgs, toolResultMessage(c.CallID, res))
		}
		if terminated {
			content := msg.Content
			if content == "" {
				content = "(called terminate)"
			}
			return d.log(runs.Message{Sender: p.Name, Role: openai.ChatMessageRoleAssistant, Content: content})
		}
	}
}

// callFor answers one logged call of an agent: the terminate tool, a tool
// that was not offered (refused without a call), or a registry call.
func (d *driver) callFor(ctx context.Context, c runs.ToolCall, offered map[string]bool, permit registry.Permit) (runs.ToolResult, error) {
	switch {
	case c.Tool == terminateTool && d.f.Termination.usesTerminateTool():
		res := runs.ToolResult{CallID: c.CallID, Result: json.RawMessage(`{"terminated":true}`)}
		return res, d.log(res)
	case !offered[c.Tool]:
		res := runs.ToolResult{CallID: c.CallID, ErrorCode: string(registry.CodeUnknownTool),
			Error: fmt.Sprintf("no tool %s was offered to %s in this turn", c.Tool, c.Participant)}
		return res, d.log(res)
	}
	return d.invoke(ctx, c, permit)
}

// toolsFor runs the prefilter over what the profile permits, as the agent
// loop does, and records the offered tools' qualified names.
func (d *driver) toolsFor(prof *agent.Profile, offered map[string]bool) []openai.Tool {
	query := d.st.task
	if n := len(d.st.msgs); n > 0 {
		query += "\n" + d.st.msgs[n-1].content
	}
	snap := d.e.cfg.Registry.Snapshot()
	q := registry.Query{Text: query, Filter: prof.Filter(), Limit: prof.MaxTools}
	hits := snap.Search(q)
	if len(hits) < prof.MaxTools && (len(prof.Tags) > 0 || len(prof.Skills) > 0) {
		// A profile bounded by tags or skills gets its other tools in the
		// slots left, as in the agent loop: its domain is small, and the
		// prefilter only ranks words.
		q.Text = ""
		hits = append(hits, snap.Search(q)...)
	}
	var tools []openai.Tool
	for _, h := range hits {
		if !h.Tool.Available() || offered[h.Tool.Name] || len(tools) == prof.MaxTools {
			continue
		}
		offered[h.Tool.Name] = true
		tools = append(tools, openaitools.Tool(h.Tool))
	}
	return tools
}

// contextFor is what participant p is shown: its profile's system prompt,
// the task, and the messages its context policy selects. Its own messages
// are the assistant's; the others' are user messages prefixed with their
// sender, so a model that ignores the name field still knows who spoke.
func (d *driver) contextFor(p *Participant, prof *agent.Profile) []openai.ChatCompletionMessage {
	sys := strings.TrimSpace(prof.System)
	if sys != "" {
		sys += "\n\n"
	}
	sys += fmt.Sprintf("You are %s, one of the participants of a conversation: %s.", p.Name, strings.Join(d.f.Names(), ", "))
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: sys},
		{Role: openai.ChatMessageRoleUser, Content: d.st.task},
	}
	senders := make([]string, len(d.st.msgs))
	for i, m := range d.st.msgs {
		senders[i] = m.sender
	}
	for _, i := range p.Context.Select(senders) {
		m := d.st.msgs[i]
		if m.sender == p.Name {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.content})
		} else {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: m.sender, Content: m.sender + ": " + m.content})
		}
	}
	return msgs
}

// replyCall finds the call of the reply function in msg and checks its
// arguments; problem says what was wrong.
func replyCall(msg openai.ChatCompletionMessage, r *Reply) (args json.RawMessage, problem string) {
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name != r.Function {
			continue
		}
		if err := r.Validate(json.RawMessage(tc.Function.Arguments)); err != nil {
			return nil, oneLine(err.Error())
		}
		return json.RawMessage(tc.Function.Arguments), ""
	}
	if len(msg.ToolCalls) > 0 {
		return nil, fmt.Sprintf("it called %s, not %s", msg.ToolCalls[0].Function.Name, r.Function)
	}
	return nil, "it answered in text instead of calling " + r.Function
}

func toolResultMessage(id string, r runs.ToolResult) openai.ChatCompletionMessage {
	content := string(r.Result)
	if r.Error != "" {
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": r.ErrorCode, "message": r.Error}})
		content = string(b)
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: content}
}
