package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// driver drives one run from its log. Its fields other than again are
// used by its own goroutine only.
type driver struct {
	e     *Engine
	run   *runs.Run
	again bool // guarded by e.mu: read the log again after returning

	f       *Flow
	st      replay
	pending []runs.Payload  // events not yet durable: flushed before any call
	fresh   map[string]bool // call ids logged by this drive, not found pending in the log
}

// convMsg is one message of the conversation as the engine keeps it.
type convMsg struct {
	sender, content string
	result          map[string]any // the structured part, nil when none
}

// replay is a run folded from its log the way the engine needs it.
type replay struct {
	task      string
	created   time.Time
	msgs      []convMsg
	lastBy    map[string]string
	turns     []Turn // for the stall guard
	completed int    // turns taken (flow.State.Round)
	tokens    int64
	terminate bool

	speaker  string // the last chosen speaker
	turnOpen bool   // the speaker was chosen and has not answered yet
	waiting  bool   // a human_input_wait without its answer
	// The open turn's tool calls and results, in log order, to rebuild
	// an agent's in-turn conversation on resume.
	calls   []runs.ToolCall
	results map[string]runs.ToolResult
	steps   int // model calls of the open turn
	nextID  int // call ids handed out in the open turn
}

// errDone ends a drive without logging: the run stopped, or the engine
// closed.
var errDone = errors.New("drive over")

// drive reads the log and runs the flow until the run stops, waits for a
// human, or the engine closes.
func (d *driver) drive() {
	ctx, cancel := context.WithCancel(d.e.ctx)
	var watch sync.WaitGroup
	defer watch.Wait()
	defer cancel()
	watch.Go(func() { // an external stop cancels the calls in flight
		select {
		case <-d.run.Done():
			cancel()
		case <-ctx.Done():
		}
	})
	err := d.load()
	if err == nil {
		err = d.loop(ctx)
	}
	if err != nil && !errors.Is(err, errDone) {
		if ctx.Err() != nil || d.run.Stopped() {
			return
		}
		d.e.log.Error("run failed", "run", d.run.ID(), "error", err)
		d.stop(runs.StopError, err.Error())
	}
}

// load folds the log into d.st and picks the flow.
func (d *driver) load() error {
	evs, err := d.run.Events(0)
	if err != nil {
		return err
	}
	d.st = replay{lastBy: map[string]string{}, results: map[string]runs.ToolResult{}}
	d.pending, d.fresh = nil, map[string]bool{}
	for _, ev := range evs {
		if err := d.st.apply(ev); err != nil {
			return err
		}
	}
	name := ""
	if len(evs) > 0 {
		if s, err := runs.Decode[runs.Started](evs[0]); err == nil {
			name = s.Name
		}
	}
	f, ok := d.e.Flows().Get(name)
	if !ok {
		return fmt.Errorf("flow %q is not loaded (flows: %s)", name, strings.Join(d.e.Flows().Names(), ", "))
	}
	d.f = f
	return nil
}

func (s *replay) apply(ev runs.Event) error {
	if ev.Kind.Extension() {
		return nil
	}
	p, err := ev.Payload()
	if err != nil {
		return err
	}
	switch p := p.(type) {
	case runs.Started:
		s.created = ev.Time
		var in startInput
		if err := json.Unmarshal(p.Input, &in); err != nil {
			return fmt.Errorf("started event: input: %w", err)
		}
		s.task = in.Task
	case runs.SpeakerChoice:
		s.speaker, s.turnOpen = p.Speaker, true
		s.calls, s.results, s.steps, s.nextID = nil, map[string]runs.ToolResult{}, 0, 0
	case runs.Usage:
		s.tokens += p.PromptTokens + p.CompletionTokens
		if p.Participant == s.speaker && s.turnOpen {
			s.steps++
		}
	case runs.ToolCall:
		if p.Tool == terminateTool {
			s.terminate = true
		}
		s.calls = append(s.calls, p)
		s.nextID++
	case runs.ToolResult:
		s.results[p.CallID] = p
	case runs.HumanInputWait:
		s.waiting = true
	case runs.HumanInput:
		s.waiting = false
		s.addMessage(p.Sender, p.Content, nil, "")
	case runs.Message:
		var result map[string]any
		if strings.HasPrefix(p.Role, roleStructured) {
			_ = json.Unmarshal([]byte(p.Content), &result)
		}
		tool, args := "", ""
		if len(s.calls) > 0 && p.Sender == s.speaker {
			tool, args = s.calls[0].Tool, canonical(s.calls[0].Arguments)
		}
		s.addMessage(p.Sender, p.Content, result, tool)
		s.turns[len(s.turns)-1].Arguments = args
	}
	return nil
}

// roleStructured marks, in a message's role, content that is the JSON of
// a structured result: a tool agent's result ("tool") or a typed reply
// ("reply"). The conditions read it as `result`.
const roleStructured = "structured:"

func (s *replay) addMessage(sender, content string, result map[string]any, tool string) {
	s.msgs = append(s.msgs, convMsg{sender: sender, content: content, result: result})
	s.lastBy[sender] = content
	s.turns = append(s.turns, Turn{Speaker: sender, Text: content, Tool: tool})
	if s.turnOpen && sender == s.speaker {
		s.turnOpen = false
		s.completed++
	}
}

// state is the flow state after the last message.
func (d *driver) state() State {
	s := State{Round: d.st.completed, LastBy: d.st.lastBy, Tokens: int(d.st.tokens),
		Elapsed: d.e.cfg.Now().Sub(d.st.created), TerminateCalled: d.st.terminate}
	if n := len(d.st.msgs); n > 0 {
		m := d.st.msgs[n-1]
		s.Sender, s.Text, s.Result = m.sender, m.content, m.result
	}
	return s
}

// log buffers p; flush makes the buffer durable. Every model and tool
// call flushes first, so what the run acts on is always in the log, and
// a round costs one fsync.
func (d *driver) log(ps ...runs.Payload) error {
	for _, p := range ps {
		if err := d.fold(p); err != nil {
			return err
		}
		if c, ok := p.(runs.ToolCall); ok {
			d.fresh[c.CallID] = true
		}
	}
	d.pending = append(d.pending, ps...)
	return nil
}

// fold applies p to the replay state as the log will hold it.
func (d *driver) fold(p runs.Payload) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return d.st.apply(runs.Event{Kind: p.Kind(), Data: data, Time: time.Now()})
}

func (d *driver) flush() error {
	if len(d.pending) == 0 {
		return nil
	}
	_, err := d.run.Append(d.pending...)
	d.pending = d.pending[:0]
	if errors.Is(err, runs.ErrStopped) || errors.Is(err, runs.ErrClosed) {
		return errDone
	}
	return err
}

// stop logs the stop with what is pending.
func (d *driver) stop(reason, detail string) error {
	d.pending = append(d.pending, runs.Stop{Reason: reason, Detail: detail})
	if err := d.flush(); err != nil {
		return err
	}
	name := ""
	if d.f != nil { // nil when the run's flow is not loaded
		name = d.f.Name
	}
	d.e.observeStop(name, reason)
	return errDone
}

// budget checks the termination condition before a call: a token budget
// or time limit met mid-turn stops the run before it spends more.
func (d *driver) budget(ctx context.Context) error {
	if ctx.Err() != nil {
		return errDone
	}
	if reason, stop := d.f.ShouldStop(d.state()); stop {
		return d.stop(reason, "met before a call of round "+fmt.Sprint(d.st.completed+1))
	}
	return nil
}

func (d *driver) loop(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return errDone
		}
		if d.st.waiting {
			return d.flush() // waits hold no goroutine
		}
		if !d.st.turnOpen {
			st := d.state()
			if reason, stop := d.f.ShouldStop(st); stop {
				return d.stop(reason, fmt.Sprintf("after round %d", st.Round))
			}
			if err := d.choose(ctx, st); err != nil {
				return err
			}
			if d.st.waiting || !d.st.turnOpen {
				continue
			}
			if o := d.e.cfg.Observer; o != nil {
				o.Round(d.f.Name)
			}
		}
		p, ok := d.f.Participant(d.st.speaker)
		if !ok {
			return d.stop(runs.StopError, fmt.Sprintf("%q is not a participant of flow %s (was the flow changed?)", d.st.speaker, d.f.Name))
		}
		var err error
		switch p.Kind() {
		case KindHuman:
			err = d.log(runs.HumanInputWait{From: d.state().Sender, Prompt: "the turn is yours: post a message to go on"})
		case KindTool:
			err = d.toolTurn(ctx, p)
		default:
			err = d.agentTurn(ctx, p)
		}
		if err != nil {
			return err
		}
		if !d.st.turnOpen && !d.st.waiting {
			if err := d.stallCheck(); err != nil {
				return err
			}
		}
	}
}

// choose picks the next speaker and logs the choice, or stops.
func (d *driver) choose(ctx context.Context, st State) error {
	cands, err := d.f.NextCandidates(st)
	if err != nil {
		reason := runs.StopError
		if errors.Is(err, ErrNoNextHop) {
			reason = ReasonNoNextHop
		}
		return d.stop(reason, err.Error())
	}
	mode := string(d.f.Selection.Mode)
	var speaker, why string
	switch {
	case st.Sender == "":
		speaker, why = cands[0], "the flow's start participant"
	case len(cands) == 1 && d.f.Selection.Mode == ModeRoundRobin:
		speaker, why = cands[0], "round robin: the participant after "+st.Sender
	case len(cands) == 1 && len(d.f.Selection.Edges) > 0:
		speaker, why = cands[0], "the one edge from "+st.Sender+" that holds"
	case len(cands) == 1:
		speaker, why = cands[0], "the only candidate"
	default:
		mode = string(ModeSelector)
		speaker, why, err = d.selectSpeaker(ctx, st, cands)
		if err != nil {
			return err
		}
	}
	next := st
	next.Next = speaker
	if reason, stop := d.f.ShouldStop(next); stop {
		return d.stop(reason, "the next turn would be "+speaker+"'s")
	}
	evs := []runs.Payload{runs.SpeakerChoice{Speaker: speaker, Mode: mode, Candidates: cands, Reason: why, Round: st.Round + 1}}
	if st.Sender != "" && len(d.f.Selection.Edges) > 0 {
		evs = append(evs, runs.Transition{From: st.Sender, To: speaker, Condition: d.edgeCondition(st.Sender, speaker)})
	}
	return d.log(evs...)
}

// edgeCondition names the edge from → to for the log.
func (d *driver) edgeCondition(from, to string) string {
	for _, e := range d.f.edges[from] {
		if e.To == to {
			switch {
			case e.Otherwise:
				return "otherwise"
			case e.When == "":
				return "always"
			default:
				return e.When
			}
		}
	}
	return "not an edge: chosen by the selector's failure rule or the stall guard"
}

// stallCheck applies the stall guard to the turn just taken.
func (d *driver) stallCheck() error {
	what, stalled := d.f.Stall.Check(d.st.turns)
	if !stalled {
		return nil
	}
	last := d.st.turns[len(d.st.turns)-1]
	detail := fmt.Sprintf("%s: %s repeated itself within %d turns", what, last.Speaker, d.f.Stall.Window)
	if d.f.Stall.Action == StallHuman && last.Speaker != d.f.Human() {
		return d.log(runs.SpeakerChoice{Speaker: d.f.Human(), Mode: "stall_guard", Reason: "stall guard: " + detail + "; action human hands the turn to the human",
			Round: d.st.completed + 1})
	}
	return d.stop(runs.StopStall, detail)
}

// nextCallID hands out the open turn's next call id: unique in the run,
// and the same on resume for the same call.
func (d *driver) nextCallID() string {
	return fmt.Sprintf("r%d-%s-%d", d.st.completed+1, d.st.speaker, d.st.nextID+1)
}

// toolTurn calls a tool agent's tool on the conversation.
func (d *driver) toolTurn(ctx context.Context, p *Participant) error {
	var call runs.ToolCall
	if len(d.st.calls) > 0 {
		call = d.st.calls[0] // logged before a crash
	} else {
		args, err := d.f.ToolArguments(p.Name, d.state())
		if err != nil {
			return d.stop(runs.StopError, err.Error())
		}
		raw, _ := json.Marshal(args)
		call = runs.ToolCall{CallID: d.nextCallID(), Participant: p.Name, Tool: p.Tool, Arguments: raw}
		if err := d.log(call); err != nil {
			return err
		}
	}
	res, ok := d.st.results[call.CallID]
	if !ok {
		var err error
		if res, err = d.invoke(ctx, call, nil); err != nil {
			return err
		}
	}
	return d.log(runs.Message{Sender: p.Name, Role: roleStructured + "tool", Content: toolMessage(res)})
}

// toolMessage is a tool agent's message: the tool's result, or for an
// error {"ok": false, "error": {code, message}}, so that a condition can
// test result.ok either way.
func toolMessage(r runs.ToolResult) string {
	if r.Error == "" {
		return string(r.Result)
	}
	b, _ := json.Marshal(map[string]any{"ok": false, "error": map[string]string{"code": r.ErrorCode, "message": r.Error}})
	return string(b)
}

// invoke makes a logged call (flushing it first) and logs its result. A
// call of a pending id that the log shows may have run already (the host
// died during it) is made again only for an idempotent tool. permit, when
// set, limits the tools an agent may call.
func (d *driver) invoke(ctx context.Context, call runs.ToolCall, permit registry.Permit) (runs.ToolResult, error) {
	if err := d.budget(ctx); err != nil {
		return runs.ToolResult{}, err
	}
	if err := d.flush(); err != nil {
		return runs.ToolResult{}, err
	}
	var res runs.ToolResult
	if t, ok := d.e.cfg.Registry.Snapshot().Tool(call.Tool); !d.fresh[call.CallID] && (!ok || !t.Annotations.Idempotent) {
		res = runs.ToolResult{CallID: call.CallID, ErrorCode: "interrupted",
			Error: "the host stopped during this call, so it may or may not have run; it is not made again because " + call.Tool + " is not idempotent"}
	} else {
		out, err := d.e.cfg.Registry.InvokePermitted(ctx, call.Tool, call.Arguments, permit)
		if ctx.Err() != nil {
			return res, errDone // stopped or closing: the call stays pending in the log
		}
		res = runs.ToolResult{CallID: call.CallID}
		if err != nil {
			re := registry.AsError(err)
			res.Error, res.ErrorCode = re.Message, string(re.Code)
		} else {
			res.Result = out.Result
		}
	}
	return res, d.log(res)
}

// canonical re-encodes JSON with sorted keys, for the stall guard.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// complete makes one model call for participant (a usage label), after
// the budget check and the flush, and logs its usage.
func (d *driver) complete(ctx context.Context, participant string, prof *agent.Profile, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
	if d.e.cfg.Model == nil {
		return openai.ChatCompletionMessage{}, d.stop(runs.StopError, "the flow needs a model and the host has none: set --llm-model (and --llm-base-url)")
	}
	if err := d.budget(ctx); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if err := d.flush(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	req.Model = prof.Model
	if req.Model == "" {
		req.Model = d.e.cfg.DefaultModel
	}
	if prof.Temperature != nil {
		req.Temperature = *prof.Temperature
	}
	msg, usage, err := d.e.cfg.Model.Complete(ctx, req)
	if ctx.Err() != nil {
		return msg, errDone
	}
	if err != nil {
		return msg, d.stop(runs.StopError, fmt.Sprintf("model call for %s: %v", participant, err))
	}
	if o := d.e.cfg.Observer; o != nil {
		o.Usage(d.f.Name, participant, int64(usage.PromptTokens), int64(usage.CompletionTokens))
	}
	return msg, d.log(runs.Usage{Participant: participant, PromptTokens: int64(usage.PromptTokens), CompletionTokens: int64(usage.CompletionTokens)})
}
