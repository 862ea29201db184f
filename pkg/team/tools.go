package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// More team tools, beside the five of member.go: the lead's task board and
// protocol tools, and the teammates' own.
const (
	ToolCreateTasks     = "create_tasks"
	ToolWaitTasks       = "wait_tasks"
	ToolRequestShutdown = "request_shutdown"
	ToolApprovePlan     = "approve_plan"
	ToolClaimTask       = "claim_task"
	ToolCompleteTask    = "complete_task"
	ToolRequestPlan     = "request_plan_approval"
	ToolRespondShutdown = "respond_shutdown"
)

// teamTool is a team tool as the model sees it.
type teamTool struct {
	name, desc, schema string
	lead, mate         bool // who is offered it
	readOnly           bool // offered in plan mode
}

var teamTools = []teamTool{
	{ToolSpawn, "Spawn a teammate with its own loop, context and tools.",
		`{"type":"object","properties":{"name":{"type":"string","description":"lowercase name"},"role":{"type":"string"},"profile":{"type":"string","description":"agent profile: its prompt and tools"}},"required":["name"]}`, true, false, false},
	{ToolList, "List the teammates with their status, inbox depth, tokens and current task.",
		`{"type":"object","properties":{}}`, true, false, true},
	{ToolBroadcast, "Send a message to every teammate.",
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, true, false, false},
	{ToolSend, "Send a message to one member of the team.",
		`{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to","text"]}`, true, true, true},
	{ToolRead, "Read the messages that came in since your turn began.",
		`{"type":"object","properties":{}}`, true, true, true},
	{ToolCreateTasks, "Create tasks on the team's board; a task with dependencies becomes claimable when they complete.",
		`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"deps":{"type":"array","items":{"type":"string"}}},"required":["id","title"]}}},"required":["tasks"]}`, true, false, false},
	{ToolWaitTasks, "Wait until the tasks are done, or the timeout, instead of polling.",
		`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}},"timeout_s":{"type":"number"}},"required":["ids"]}`, true, false, true},
	{ToolRequestShutdown, "Ask a teammate to shut down; it answers with respond_shutdown.",
		`{"type":"object","properties":{"to":{"type":"string"},"reason":{"type":"string"}},"required":["to"]}`, true, false, false},
	{ToolApprovePlan, "Answer a teammate's plan approval request.",
		`{"type":"object","properties":{"request_id":{"type":"string"},"approve":{"type":"boolean"},"feedback":{"type":"string"}},"required":["request_id","approve"]}`, true, false, false},
	{ToolClaimTask, "Claim a task of the board (the next claimable one when no id is given).",
		`{"type":"object","properties":{"id":{"type":"string"}}}`, false, true, false},
	{ToolCompleteTask, "Complete the task you hold with its result.",
		`{"type":"object","properties":{"id":{"type":"string"},"result":{"type":"string"}},"required":["id","result"]}`, false, true, false},
	{ToolRequestPlan, "Ask the lead to approve your plan (in plan mode).",
		`{"type":"object","properties":{"plan":{"type":"string"}},"required":["plan"]}`, false, true, true},
	{ToolRespondShutdown, "Answer the lead's shutdown request; approved, you stop after this turn.",
		`{"type":"object","properties":{"request_id":{"type":"string"},"approve":{"type":"boolean"},"reason":{"type":"string"}},"required":["request_id","approve"]}`, false, true, true},
}

func findTeamTool(name string) (teamTool, bool) {
	i := slices.IndexFunc(teamTools, func(tt teamTool) bool { return tt.name == name })
	if i < 0 {
		return teamTool{}, false
	}
	return teamTools[i], true
}

// toolCtx is one turn's tools: what it offered and how it calls them.
type toolCtx struct {
	d       *Driver
	t       *Team
	name    string
	calls   int
	offered map[string]*registry.Tool // registry tools offered, by qualified name; nil entry: a team tool
	mode    agent.Mode
	logged  bool // the last call logged its own result
}

func (tc *toolCtx) nextID() string {
	tc.calls++
	return fmt.Sprintf("%s-call-%d", tc.name, tc.calls)
}

// tools is what the member's model is offered now: the registry tools
// its profile permits (prefiltered on query, as the agent loop does) and
// its team tools, filtered by Member.ToolsAllowed (plan mode: read-only).
func (tc *toolCtx) tools(prof *agent.Profile, m Member, query string) []openai.Tool {
	tc.mode = prof.Mode
	if tc.offered == nil {
		tc.offered = map[string]*registry.Tool{}
		snap := tc.d.cfg.Registry.Snapshot()
		q := registry.Query{Text: query, Filter: prof.Filter(), Limit: prof.MaxTools}
		hits := snap.Search(q)
		if len(hits) < prof.MaxTools && (len(prof.Tags) > 0 || len(prof.Skills) > 0) {
			q.Text = ""
			hits = append(hits, snap.Search(q)...)
		}
		for _, h := range hits {
			if h.Tool.Available() && tc.offered[h.Tool.Name] == nil && len(tc.offered) < prof.MaxTools {
				tc.offered[h.Tool.Name] = h.Tool
			}
		}
	}
	var names []string
	for _, tt := range teamTools {
		if m.Lead && tt.lead || !m.Lead && tt.mate {
			names = append(names, tt.name)
		}
	}
	for name := range tc.offered {
		names = append(names, name)
	}
	slices.Sort(names[len(names)-len(tc.offered):])
	readOnly := func(name string) bool {
		if tt, ok := findTeamTool(name); ok {
			return tt.readOnly
		}
		rt := tc.offered[name]
		return rt != nil && rt.Annotations.ReadOnly
	}
	var out []openai.Tool
	for _, name := range m.ToolsAllowed(names, readOnly) {
		if tt, ok := findTeamTool(name); ok {
			out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
				Name: tt.name, Description: tt.desc, Parameters: json.RawMessage(tt.schema)}})
			continue
		}
		out = append(out, offer(tc.offered[name]))
	}
	return out
}

// logResult logs a call's result, unless the call logged it itself
// (read_inbox: with the mail it consumed, in one write).
func (tc *toolCtx) logResult(res runs.ToolResult) error {
	if tc.logged {
		tc.logged = false
		return nil
	}
	return tc.t.Consume(tc.name, nil, res)
}

// resumeCall answers a call logged before a crash: team tools are made
// again (each is idempotent by its call id); a registry tool only if it
// is idempotent.
func (tc *toolCtx) resumeCall(ctx context.Context, call runs.ToolCall) runs.ToolResult {
	if _, ok := findTeamTool(call.Tool); ok {
		return tc.teamCall(ctx, call)
	}
	if t, ok := tc.d.cfg.Registry.Snapshot().Tool(call.Tool); !ok || !t.Annotations.Idempotent {
		return runs.ToolResult{CallID: call.CallID, ErrorCode: "interrupted",
			Error: "the host stopped during this call, so it may or may not have run; it is not made again because " + call.Tool + " is not idempotent"}
	}
	return tc.registryCall(ctx, call, true)
}

// call makes one logged call.
func (tc *toolCtx) call(ctx context.Context, call runs.ToolCall) runs.ToolResult {
	if tt, ok := findTeamTool(call.Tool); ok {
		m, err := tc.t.Member(tc.name)
		if err != nil {
			return errResult(call, err)
		}
		if len(m.ToolsAllowed([]string{tt.name}, func(string) bool { return tt.readOnly })) == 0 || !(m.Lead && tt.lead || !m.Lead && tt.mate) {
			return runs.ToolResult{CallID: call.CallID, ErrorCode: string(registry.CodeForbidden),
				Error: fmt.Sprintf("%s may not call %s now", tc.name, tt.name)}
		}
		return tc.teamCall(ctx, call)
	}
	return tc.registryCall(ctx, call, false)
}

func (tc *toolCtx) registryCall(ctx context.Context, call runs.ToolCall, resumed bool) runs.ToolResult {
	offered := tc.offered[call.Tool]
	if offered == nil && !resumed {
		return runs.ToolResult{CallID: call.CallID, ErrorCode: string(registry.CodeUnknownTool),
			Error: fmt.Sprintf("no tool %s was offered to %s in this turn", call.Tool, tc.name)}
	}
	m, _ := tc.t.Member(tc.name)
	permit := func(t *registry.Tool) error {
		if (tc.mode != agent.ModeFull || m.ReadOnly()) && !t.Annotations.ReadOnly {
			return registry.Errorf(registry.CodeForbidden, "%s may not call %s: it is read-only now", tc.name, t.Name)
		}
		return nil
	}
	out, err := tc.d.cfg.Registry.InvokePermitted(ctx, call.Tool, call.Arguments, permit)
	if err != nil {
		re := registry.AsError(err)
		return runs.ToolResult{CallID: call.CallID, Error: re.Message, ErrorCode: string(re.Code)}
	}
	return runs.ToolResult{CallID: call.CallID, Result: out.Result}
}

func errResult(call runs.ToolCall, err error) runs.ToolResult {
	return runs.ToolResult{CallID: call.CallID, ErrorCode: ErrorCode(err), Error: err.Error()}
}

func okResult(call runs.ToolCall, v any) runs.ToolResult {
	return runs.ToolResult{CallID: call.CallID, Result: mustJSON(v)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// teamArgs are the arguments of every team tool (each uses a few).
type teamArgs struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Profile   string     `json:"profile"`
	To        string     `json:"to"`
	Text      string     `json:"text"`
	Reason    string     `json:"reason"`
	Plan      string     `json:"plan"`
	Feedback  string     `json:"feedback"`
	RequestID string     `json:"request_id"`
	Approve   *bool      `json:"approve"`
	ID        string     `json:"id"`
	IDs       []string   `json:"ids"`
	TimeoutS  float64    `json:"timeout_s"`
	Result    string     `json:"result"`
	Tasks     []TaskSpec `json:"tasks"`
}

// teamCall makes a team tool call. Each is idempotent by the call id (the
// messages it sends carry it as their id), so a call made again after a
// crash sends nothing twice.
func (tc *toolCtx) teamCall(ctx context.Context, call runs.ToolCall) runs.ToolResult {
	var a teamArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return runs.ToolResult{CallID: call.CallID, ErrorCode: string(registry.CodeInvalidArguments), Error: "arguments: " + err.Error()}
	}
	t, me := tc.t, tc.name
	send := func(m Message) runs.ToolResult {
		m.ID, m.From = call.CallID, me
		sent, err := t.Send(m)
		if err != nil {
			return errResult(call, err)
		}
		return okResult(call, map[string]string{"sent": sent.ID, "request_id": sent.RequestID})
	}
	approve := func() (bool, error) {
		if a.Approve == nil {
			return false, fmt.Errorf("%w: approve (true or false) is required", ErrInvalid)
		}
		return *a.Approve, nil
	}
	switch call.Tool {
	case ToolSpawn:
		m, err := t.Spawn(me, MemberSpec{Name: a.Name, Role: a.Role, Profile: a.Profile})
		if errors.Is(err, ErrMemberExists) {
			if m, err2 := t.Member(a.Name); err2 == nil && m.Role == a.Role && m.Profile == a.Profile {
				return okResult(call, m) // made again after a crash
			}
		}
		if err != nil {
			return errResult(call, err)
		}
		return okResult(call, m)
	case ToolList:
		ms, err := t.List(me)
		if err != nil {
			return errResult(call, err)
		}
		return okResult(call, ms)
	case ToolBroadcast:
		return send(Message{Type: TypeBroadcast, Content: a.Text})
	case ToolSend:
		return send(Message{Type: TypeMessage, To: a.To, Content: a.Text})
	case ToolRead:
		mail, err := t.Inbox(me, 0)
		if err != nil {
			return errResult(call, err)
		}
		type shown struct {
			ID        string      `json:"id"`
			Type      MessageType `json:"type"`
			From      string      `json:"from"`
			Content   string      `json:"content,omitempty"`
			RequestID string      `json:"request_id,omitempty"`
			Approve   *bool       `json:"approve,omitempty"`
			Bounced   *Message    `json:"bounced,omitempty"`
		}
		out := make([]shown, len(mail))
		for i, m := range mail {
			out[i] = shown{m.ID, m.Type, m.From, m.Content, m.RequestID, m.Approve, m.Bounced}
		}
		res := okResult(call, map[string]any{"messages": out})
		// The mail leaves the inbox in the same write as the result that
		// shows it: logResult must not log it again.
		if err := t.Consume(me, mail, res); err != nil {
			return errResult(call, err)
		}
		tc.logged = true
		return res
	case ToolCreateTasks:
		ts, err := t.CreateTasks(me, a.Tasks...)
		if err != nil {
			// Made again after a crash: the tasks are there already.
			if errors.Is(err, ErrTaskExists) {
				if ts, ok := tc.sameTasks(a.Tasks); ok {
					return okResult(call, ts)
				}
			}
			return errResult(call, err)
		}
		return okResult(call, ts)
	case ToolWaitTasks:
		wait := min(time.Duration(a.TimeoutS*float64(time.Second)), tc.d.cfg.MaxWait)
		if wait <= 0 {
			wait = tc.d.cfg.MaxWait
		}
		ts, err := t.WaitTasks(ctx, a.IDs, wait)
		if err != nil && !errors.Is(err, ErrTimeout) {
			return errResult(call, err)
		}
		return okResult(call, map[string]any{"tasks": ts, "timed_out": errors.Is(err, ErrTimeout)})
	case ToolRequestShutdown:
		return send(Message{Type: TypeShutdownRequest, To: a.To, Content: a.Reason})
	case ToolApprovePlan:
		ok, err := approve()
		if err != nil {
			return errResult(call, err)
		}
		r, err := t.Request(a.RequestID)
		if err != nil {
			return errResult(call, err)
		}
		return send(Message{Type: TypePlanApprovalResponse, To: r.From, RequestID: a.RequestID, Approve: &ok, Content: a.Feedback})
	case ToolClaimTask:
		var task Task
		var err error
		if a.ID == "" {
			var ok bool
			task, ok, err = t.ClaimNext(me, 0)
			if err == nil && !ok {
				return okResult(call, map[string]any{"claimed": false, "reason": "no task is claimable now"})
			}
		} else {
			task, err = t.Claim(me, a.ID, 0)
			if errors.Is(err, ErrNotClaimable) || errors.Is(err, ErrHoldsTask) {
				if cur, err2 := t.Task(a.ID); err2 == nil && cur.Owner == me && !cur.Done() {
					task, err = cur, nil // made again after a crash
				}
			}
		}
		if err != nil {
			return errResult(call, err)
		}
		return okResult(call, task)
	case ToolCompleteTask:
		task, err := t.Complete(me, a.ID, a.Result)
		if err != nil {
			if cur, err2 := t.Task(a.ID); err2 == nil && cur.Done() && cur.Owner == me {
				return okResult(call, cur) // made again after a crash
			}
			return errResult(call, err)
		}
		return okResult(call, task)
	case ToolRequestPlan:
		return send(Message{Type: TypePlanApprovalRequest, To: t.Lead(), Content: a.Plan})
	case ToolRespondShutdown:
		ok, err := approve()
		if err != nil {
			return errResult(call, err)
		}
		return send(Message{Type: TypeShutdownResponse, To: t.Lead(), RequestID: a.RequestID, Approve: &ok, Content: a.Reason})
	}
	return runs.ToolResult{CallID: call.CallID, ErrorCode: string(registry.CodeUnknownTool), Error: "no team tool " + call.Tool}
}

func (tc *toolCtx) sameTasks(specs []TaskSpec) ([]Task, bool) {
	var out []Task
	for _, s := range specs {
		task, err := tc.t.Task(s.ID)
		if err != nil {
			return nil, false
		}
		out = append(out, task)
	}
	return out, true
}
