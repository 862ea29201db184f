package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
)

// run is what the sessions of one Run share: the event sink and the
// aggregates of the response. Sub-agents run inside tool calls, which run
// in parallel, so both are guarded.
type run struct {
	a      *Agent
	id     uint64
	stream bool

	emitMu sync.Mutex // serializes calls to emitFn
	emitFn func(Event)

	callSeq atomic.Uint64 // numbers the tool calls the endpoint sent without an id

	mu       sync.Mutex // guards the fields below
	calls    []*ToolCall
	skills   map[string]string
	usage    Usage
	counters Counters
	notes    []string
}

func (r *run) emit(e Event) {
	if r.emitFn == nil {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.emitFn(e)
}

func (r *run) count(f func(c *Counters)) {
	r.mu.Lock()
	f(&r.counters)
	r.mu.Unlock()
}

// session is one agent's conversation: the top-level run or a sub-agent.
// Its fields belong to the goroutine running loop.
type session struct {
	r      *run
	p      *Profile
	model  string
	depth  int
	parent string // the delegate call that started it; "" at the top

	msgs      []openai.ChatCompletionMessage
	tools     []openai.Tool             // sent with every request unless toolsOff
	offered   map[string]*registry.Tool // by LLM-facing name
	delegates map[string]*Profile       // by delegate tool name
	toolsOff  bool                      // the endpoint rejected tool use
	steps     int
	builtins  []string   // the disclosure tools offered (disclose.go)
	disc      disclosure // what they share while a turn's calls run
}

// newSession builds a session's history and tool view and checks that its
// first request fits the profile's budget.
func (r *run) newSession(ctx context.Context, p *Profile, depth int, parent string, history []Message) (*session, error) {
	s := &session{r: r, p: p, model: r.a.modelFor(p), depth: depth, parent: parent,
		offered: map[string]*registry.Tool{}, delegates: map[string]*Profile{}}
	if strings.TrimSpace(p.System) != "" {
		s.msgs = append(s.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: p.System})
	}
	var query []string
	for _, m := range history {
		s.msgs = append(s.msgs, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
		if m.Role == "user" {
			query = append(query, m.Content)
		}
	}
	s.selectTools(ctx, strings.Join(query, "\n"))
	s.offerDisclosure(strings.Join(query, "\n"))
	if est := estimateRequest(s.msgs, s.tools); est > p.ContextBudget {
		return nil, s.overBudget(est)
	}
	r.emit(s.event(EventStart, func(e *Event) { e.Model, e.Tools = s.model, s.offeredNames() }))
	return s, nil
}

// selectTools runs the prefilter over what the profile permits. A profile
// bounded by tags or skills has its remaining slots, up to max_tools,
// filled with its other tools (tag matches first, then by name): its
// domain is small, the prefilter only ranks words, and a question such as
// "how much may I claim for 3 nights?" needs the calculator it never names.
// An unbounded profile gets the prefilter's hits only, which over a large
// registry is the point of the prefilter.
func (s *session) selectTools(ctx context.Context, text string) {
	snap := s.r.a.cfg.Registry.Snapshot()
	q := registry.Query{Text: text, Filter: s.p.Filter(), Limit: s.p.MaxTools}
	hits := snap.SearchContext(ctx, q) // with the run's context: a rerank may call out
	if len(hits) < s.p.MaxTools && (len(s.p.Tags) > 0 || len(s.p.Skills) > 0) {
		q.Text = ""
		seen := map[string]bool{}
		for _, h := range hits {
			seen[h.Tool.Name] = true
		}
		for _, h := range snap.SearchContext(ctx, q) {
			if len(hits) == s.p.MaxTools {
				break
			}
			if !seen[h.Tool.Name] {
				hits = append(hits, h)
			}
		}
	}
	for _, h := range hits {
		if !s.p.permits(h.Tool) { // the registry filtered already; this is the rule callers rely on
			continue
		}
		s.offered[h.Tool.LLMName] = h.Tool
		s.tools = append(s.tools, openaitools.Tool(h.Tool))
	}
	if s.depth < s.r.a.cfg.Profiles.MaxDepth() {
		for _, name := range s.p.Delegates {
			d, ok := s.r.a.cfg.Profiles.Get(name)
			if !ok {
				continue
			}
			tn := delegateToolName(name)
			s.delegates[tn] = d
			s.tools = append(s.tools, delegateTool(tn, d))
		}
	}
}

// offeredNames lists the LLM-facing names of the tools sent, in order.
func (s *session) offeredNames() []string {
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// delegateToolName cannot collide with a registry tool: those always hold
// "__" (skill__tool), and a profile name, which follows the skill name rule,
// can neither start with "_" nor hold "__".
func delegateToolName(profile string) string { return "delegate_" + profile }

var delegateParams = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","minLength":1,` +
	`"description":"The sub-task, stated completely: the agent sees nothing of this conversation but this text."}},` +
	`"required":["task"],"additionalProperties":false}`)

func delegateTool(name string, p *Profile) openai.Tool {
	desc := fmt.Sprintf("Hand a sub-task to the %s agent, which works on it with its own tools and returns its answer.", p.Name)
	if p.Description != "" {
		desc += " " + p.Name + ": " + p.Description
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: name, Description: desc, Parameters: delegateParams,
	}}
}

func (s *session) event(t EventType, fill func(*Event)) Event {
	e := Event{Type: t, Profile: s.p.Name, Depth: s.depth, Parent: s.parent, Step: s.steps}
	if fill != nil {
		fill(&e)
	}
	return e
}

func (s *session) note(msg string) {
	if s.depth > 0 {
		msg = fmt.Sprintf("sub-agent %s (depth %d): %s", s.p.Name, s.depth, msg)
	}
	s.r.mu.Lock()
	s.r.notes = append(s.r.notes, msg)
	s.r.mu.Unlock()
	s.r.emit(s.event(EventNotice, func(e *Event) { e.Message = msg }))
}

func (s *session) overBudget(est int) *registry.Error {
	return registry.Errorf(CodeContextBudget,
		"the request to the model is about %d tokens, over profile %s's context budget of %d; shorten the conversation or raise context_budget (it should leave the model room to answer)",
		est, s.p.Name, s.p.ContextBudget).
		With("estimated_tokens", est).With("context_budget", s.p.ContextBudget).With("profile", s.p.Name).With("step", s.steps)
}

// outcome is how a session ended.
type outcome struct {
	answer, finish string
	steps          int
}

// loop asks the model and runs its tool calls until it answers in text or
// the step limit is reached.
func (s *session) loop(ctx context.Context) (outcome, error) {
	unrun := 0 // tool calls asked for at the last step
	for s.steps < s.p.MaxSteps {
		s.steps++
		t, err := s.ask(ctx)
		if err != nil {
			return outcome{}, err
		}
		msg := s.assistantMessage(t.msg)
		if len(msg.ToolCalls) > 0 && !s.toolsOff && s.steps == s.p.MaxSteps {
			// No model call is left to read their results: running them
			// would have effects nobody sees.
			unrun = len(msg.ToolCalls)
			if msg.Content != "" {
				s.msgs = append(s.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content})
			}
			break
		}
		s.msgs = append(s.msgs, msg)
		if len(msg.ToolCalls) == 0 || s.toolsOff {
			finish := t.finish
			switch finish {
			case "", string(openai.FinishReasonStop), string(openai.FinishReasonToolCalls):
				finish = "stop"
			case string(openai.FinishReasonLength):
				s.note("the model stopped at its output token limit; the answer may be cut short")
			}
			return outcome{answer: msg.Content, finish: finish, steps: s.steps}, nil
		}
		results := s.runCalls(ctx, msg.ToolCalls)
		if ctx.Err() != nil {
			return outcome{}, ctxErr(ctx, "running tool calls")
		}
		s.msgs = append(s.msgs, results...)
		s.applyAdded()
	}
	why := fmt.Sprintf("stopped after %d steps, the profile's max_steps, before the model gave a final answer", s.p.MaxSteps)
	if unrun > 0 {
		why += fmt.Sprintf("; the %d tool call(s) it asked for last were not run", unrun)
	}
	s.note(why)
	var last string
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if m := s.msgs[i]; m.Role == openai.ChatMessageRoleAssistant && m.Content != "" {
			last = m.Content
			break
		}
	}
	return outcome{answer: last, finish: "step_limit", steps: s.steps}, nil
}

// ask sends the conversation to the model. An endpoint that rejects tool
// use gets the same conversation again without tools, once.
func (s *session) ask(ctx context.Context) (turn, error) {
	for {
		tools := s.tools
		if s.toolsOff {
			tools = nil
		}
		est := estimateRequest(s.msgs, tools)
		s.r.mu.Lock()
		s.r.usage.EstimatedPromptTokens = max(s.r.usage.EstimatedPromptTokens, est)
		s.r.mu.Unlock()
		if est > s.p.ContextBudget {
			return turn{}, s.overBudget(est)
		}
		req := openai.ChatCompletionRequest{Model: s.model, Messages: s.msgs, Tools: tools}
		if s.p.Temperature != nil {
			req.Temperature = *s.p.Temperature
			if req.Temperature == 0 {
				// go-openai omits a zero temperature; the smallest float
				// is sent instead and is greedy decoding all the same.
				req.Temperature = math.SmallestNonzeroFloat32
			}
		}
		opts := callOpts{
			stream: s.r.stream,
			onDelta: func(d string) {
				s.r.emit(s.event(EventDelta, func(e *Event) { e.Delta = d }))
			},
			onRetry: func(attempt int, wait time.Duration, e *registry.Error) {
				s.r.count(func(c *Counters) { c.ModelRetries++ })
				s.r.emit(s.event(EventNotice, func(ev *Event) {
					ev.Message = fmt.Sprintf("model attempt %d failed (%s); retrying in %s", attempt, e.Message, wait.Round(time.Millisecond))
				}))
			},
		}
		s.r.count(func(c *Counters) { c.ModelCalls++ })
		t, merr := s.r.a.model.complete(ctx, req, opts)
		if merr != nil {
			if merr.toolsRejected && !s.toolsOff {
				s.toolsOff = true
				s.note(fmt.Sprintf("the model endpoint rejected tool use (%s); answered without tools", merr.err.Message))
				continue
			}
			return turn{}, merr.err
		}
		s.r.mu.Lock()
		s.r.usage.PromptTokens += t.usage.PromptTokens
		s.r.usage.CompletionTokens += t.usage.CompletionTokens
		s.r.usage.TotalTokens += t.usage.TotalTokens
		s.r.mu.Unlock()
		return t, nil
	}
}

// assistantMessage is the model's message as it goes back into the history:
// tool calls get ids if the endpoint sent none, and lose their stream index.
func (s *session) assistantMessage(m openai.ChatCompletionMessage) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Content}
	for _, tc := range m.ToolCalls {
		if tc.ID == "" {
			// Unique across the run, sub-agents included: events and the
			// response's tool_calls pair calls by id.
			tc.ID = fmt.Sprintf("call_%d_%d", s.r.id, s.r.callSeq.Add(1))
		}
		tc.Index = nil
		tc.Type = openai.ToolTypeFunction
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	return out
}

// runCalls runs one turn's tool calls concurrently and returns the tool
// messages in the order the model asked.
func (s *session) runCalls(ctx context.Context, calls []openai.ToolCall) []openai.ChatCompletionMessage {
	// The turn's results share what the budget leaves after the request so
	// far; a result that does not fit in what is left is answered as an
	// error instead, so that the next request still fits.
	room := &budgetRoom{left: s.p.ContextBudget - estimateRequest(s.msgs, s.activeTools())}
	recs := make([]*ToolCall, len(calls))
	for i, tc := range calls {
		recs[i] = &ToolCall{ID: tc.ID, Name: tc.Function.Name, Profile: s.p.Name, Depth: s.depth, Arguments: rawArgs(tc.Function.Arguments)}
		if t, ok := s.lookup(tc.Function.Name); ok {
			recs[i].Tool = t.Name
		}
	}
	s.r.mu.Lock()
	s.r.calls = append(s.r.calls, recs...)
	s.r.counters.ToolCalls += len(calls)
	s.r.mu.Unlock()

	out := make([]openai.ChatCompletionMessage, len(calls))
	sem := make(chan struct{}, s.r.a.cfg.MaxParallelCalls)
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID,
				Content: s.call(ctx, tc, recs[i], room)}
		}()
	}
	wg.Wait()
	return out
}

// budgetRoom is what one turn's tool results may still add to the context.
// The turn's calls run concurrently and take from it as they finish.
type budgetRoom struct {
	mu   sync.Mutex // guards left
	left int
}

// charge claims cost tokens whether or not they fit.
func (b *budgetRoom) charge(cost int) {
	b.mu.Lock()
	b.left -= cost
	b.mu.Unlock()
}

// toolMessageCost estimates what a tool message adds to the next request.
func toolMessageCost(content, id string) int {
	return estimateMessage(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: content, ToolCallID: id})
}

// take claims cost tokens if they fit; it returns what was left before.
func (b *budgetRoom) take(cost int) (left int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	left = max(b.left, 0)
	if cost > b.left {
		return left, false
	}
	b.left -= cost
	return left, true
}

func (s *session) activeTools() []openai.Tool {
	if s.toolsOff {
		return nil
	}
	return s.tools
}

// call runs one tool call and returns the tool message's content: the
// result, or {"error": {...}}. It fills rec and emits the call's events.
func (s *session) call(ctx context.Context, tc openai.ToolCall, rec *ToolCall, room *budgetRoom) string {
	started := *rec
	s.r.emit(s.event(EventToolCallStarted, func(e *Event) { e.Call = &started }))
	start := time.Now()
	content, e := s.exec(ctx, tc, rec, room)
	if e == nil {
		cost := toolMessageCost(content, tc.ID)
		if left, ok := room.take(cost); !ok {
			e = registry.Errorf(CodeContextBudget,
				"the result of %s is about %d tokens, more than the %d tokens left in profile %s's context budget of %d; ask for less (a narrower query, a smaller limit)",
				tc.Function.Name, cost, left, s.p.Name, s.p.ContextBudget).
				With("estimated_tokens", cost).With("room", left)
			s.r.count(func(c *Counters) { c.ToolErrors++ })
		}
	}
	rec.DurationMS = ms(time.Since(start))
	if e != nil {
		rec.OK, rec.Error, rec.Summary = false, e, summarize(e.Message)
		content = errorContent(e)
		// The answer to a mistake goes into the next request as well. One
		// that does not fit what is left (an unknown tool's list of every
		// offered one) is cut to its code and the start of its message.
		if _, ok := room.take(toolMessageCost(content, tc.ID)); !ok {
			content = errorContent(&registry.Error{Code: e.Code, Retryable: e.Retryable, Message: summarize(e.Message)})
			room.charge(toolMessageCost(content, tc.ID))
		}
	} else {
		rec.OK, rec.Summary = true, summarize(content)
	}
	finished := *rec
	s.r.emit(s.event(EventToolCallFinished, func(e *Event) { e.Call = &finished }))
	if log := s.r.a.log; log.IsDebug() {
		// Never the arguments or the result: they may hold what a user
		// asked or what a skill knows.
		code := registry.Code("")
		if e != nil {
			code = e.Code
		}
		log.Debug("tool call", "run", s.r.id, "profile", s.p.Name, "depth", s.depth, "tool", rec.Name,
			"ok", rec.OK, "code", code, "took_ms", rec.DurationMS)
	}
	return content
}

// exec routes a call to a delegate or the registry. Problems the model can
// fix (an unknown name, bad arguments) come back as errors it is shown.
func (s *session) exec(ctx context.Context, tc openai.ToolCall, rec *ToolCall, room *budgetRoom) (string, *registry.Error) {
	name := tc.Function.Name
	if s.isBuiltin(name) {
		return s.execBuiltin(ctx, tc, room)
	}
	if d, ok := s.delegates[name]; ok {
		return s.delegate(ctx, tc, rec, d)
	}
	t, ok := s.lookup(name)
	if !ok {
		s.r.count(func(c *Counters) { c.InventedTools++ })
		return "", registry.Errorf(registry.CodeUnknownTool, "unknown tool %q: this agent was not offered it; call one of: %s",
			name, strings.Join(s.offeredNames(), ", ")).With("tool", name).With("offered", s.offeredNames())
	}
	args := strings.TrimSpace(tc.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	if err := checkJSON(args); err != nil {
		s.r.count(func(c *Counters) { c.InvalidArguments++ })
		return "", registry.Errorf(registry.CodeInvalidArguments, "arguments of %s are not valid JSON (%v); send one JSON object that matches the tool's parameters", name, err).
			With("tool", t.Name)
	}
	// The offer was made on an earlier snapshot: a hot swap since may have
	// brought a version of the tool this profile may not call. The registry
	// checks that on the snapshot the call runs on.
	res, err := s.r.a.cfg.Registry.InvokePermitted(ctx, t.Name, []byte(args), func(cur *registry.Tool) error {
		if !s.p.permits(cur) {
			return registry.Errorf(registry.CodeForbidden, "%s is no longer permitted to profile %s (its serving version %s changed its tags or is not read-only)",
				cur.Name, s.p.Name, cur.Version).With("tool", cur.Name)
		}
		return nil
	})
	if err != nil {
		e := registry.AsError(err)
		s.r.count(func(c *Counters) {
			if e.Code == registry.CodeInvalidArguments {
				c.InvalidArguments++
			} else {
				c.ToolErrors++
			}
		})
		return "", e
	}
	rec.Skill, rec.Version = res.Skill, res.Version
	s.r.mu.Lock()
	s.r.skills[res.Skill] = res.Version
	s.r.mu.Unlock()
	return string(res.Result), nil
}

// lookup finds an offered tool by the name the model used.
func (s *session) lookup(name string) (*registry.Tool, bool) {
	if t, ok := s.offered[name]; ok {
		return t, true
	}
	// Models sometimes write skill.tool for skill__tool.
	if skill, tool, err := registry.SplitName(name); err == nil {
		t, ok := s.offered[registry.LLMName(skill, tool)]
		return t, ok
	}
	return nil, false
}

// delegate runs a sub-agent of profile d on the task the model wrote and
// returns its answer.
func (s *session) delegate(ctx context.Context, tc openai.ToolCall, rec *ToolCall, d *Profile) (string, *registry.Error) {
	var in struct {
		Task string `json:"task"`
	}
	dec := json.NewDecoder(strings.NewReader(tc.Function.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || strings.TrimSpace(in.Task) == "" {
		s.r.count(func(c *Counters) { c.InvalidArguments++ })
		msg := "no task given"
		if err != nil {
			msg = err.Error()
		}
		return "", registry.Errorf(registry.CodeInvalidArguments, `arguments of %s must be {"task": "<the sub-task, stated completely>"} (%s)`, tc.Function.Name, msg).
			With("tool", tc.Function.Name)
	}
	s.r.count(func(c *Counters) { c.Delegations++ })
	sub, err := s.r.newSession(ctx, d, s.depth+1, tc.ID, []Message{{Role: "user", Content: in.Task}})
	if err != nil {
		s.r.count(func(c *Counters) { c.ToolErrors++ })
		return "", registry.AsError(err)
	}
	out, err := sub.loop(ctx)
	if err != nil {
		s.r.count(func(c *Counters) { c.ToolErrors++ })
		e := registry.AsError(err)
		return "", &registry.Error{Code: e.Code, Retryable: e.Retryable, Details: e.Details,
			Message: fmt.Sprintf("sub-agent %s failed: %s", d.Name, e.Message)}
	}
	b, _ := json.Marshal(struct {
		Profile      string `json:"profile"`
		Answer       string `json:"answer"`
		FinishReason string `json:"finish_reason"`
		Steps        int    `json:"steps"`
	}{d.Name, out.answer, out.finish, out.steps})
	return string(b), nil
}

// checkJSON reports why s is not one JSON value.
func checkJSON(s string) error {
	dec := json.NewDecoder(strings.NewReader(s))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// rawArgs keeps valid JSON arguments as they are and wraps anything else
// as a JSON string, so a response can always be encoded.
func rawArgs(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

func errorContent(e *registry.Error) string {
	b, _ := json.Marshal(struct {
		Error *registry.Error `json:"error"`
	}{e})
	return string(b)
}

// summaryRunes is how much of a result a response shows.
const summaryRunes = 200

func summarize(s string) string {
	if utf8.RuneCountInString(s) <= summaryRunes {
		return s
	}
	r := []rune(s)
	return string(r[:summaryRunes]) + "…"
}
