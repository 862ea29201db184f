package team

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
	"github.com/skillhost/skillhost/pkg/runs"
)

// Model is what the driver needs of a language model: one chat completion
// with tools, not streamed. It must honour ctx (a reaped member's call is
// cancelled) and is called from several workers at once.
// *agent.ChatClient satisfies it.
type Model interface {
	Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error)
}

var _ Model = (*agent.ChatClient)(nil)

// DriverConfig is what a Driver runs members' loops with. Store,
// Registry and Profiles are required.
type DriverConfig struct {
	Store    *Store
	Registry *registry.Registry
	Profiles *agent.Profiles
	// Model answers members. Without one, a member's turn logs that the
	// host has no model and ends.
	Model Model
	// DefaultModel is the model of every profile that names none.
	DefaultModel string
	// Workers bounds how many members run a turn at once; 4 when 0.
	Workers int
	// MaxWait caps a wait_tasks call, which holds its worker; 2 minutes
	// when 0.
	MaxWait time.Duration
	Logger  *slog.Logger
}

// Driver runs the members' agent loops: a bounded pool of workers takes
// members with unconsumed mail (Store.Ready and Take) and runs one turn
// each. An idle member holds no goroutine; a message wakes it.
type Driver struct {
	cfg DriverConfig
	log *slog.Logger

	mu      sync.Mutex                    // guards running
	running map[string]context.CancelFunc // team/member → its turn's cancel, for Reap
}

// NewDriver checks cfg and returns a driver; Run starts it.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("DriverConfig.Store is required"))
	}
	if cfg.Registry == nil {
		errs = append(errs, errors.New("DriverConfig.Registry is required"))
	}
	if cfg.Profiles == nil {
		errs = append(errs, errors.New("DriverConfig.Profiles is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("team driver: %w", err)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{cfg: cfg, log: cfg.Logger, running: map[string]context.CancelFunc{}}, nil
}

// Run loads every team on disk (so members with unread mail resume) and
// runs turns until ctx ends; it then cancels the turns in flight and
// returns once every worker has returned. A cancelled turn leaves its
// log as it was: the next Run goes on from there.
func (d *Driver) Run(ctx context.Context) error {
	ids, err := d.cfg.Store.IDs()
	if err != nil {
		return fmt.Errorf("team driver: %w", err)
	}
	for _, id := range ids {
		t, err := d.cfg.Store.Team(id)
		if err != nil {
			d.log.Warn("team not loaded", "team", id, "err", err)
			continue
		}
		if err := t.queueOpenTurns(); err != nil {
			d.log.Warn("team's open turns not resumed", "team", id, "err", err)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, d.cfg.Workers)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d.reap()
		// Hand out members while a worker is free.
		for {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			t, name, ok := d.cfg.Store.Take()
			if !ok {
				<-sem
				break
			}
			tctx, cancel := context.WithCancel(ctx)
			key := t.ID() + "/" + name
			d.mu.Lock()
			d.running[key] = cancel
			d.mu.Unlock()
			wg.Go(func() {
				defer func() { <-sem }()
				defer t.Release(name)
				defer func() {
					d.mu.Lock()
					delete(d.running, key)
					d.mu.Unlock()
					cancel()
				}()
				if err := d.turn(tctx, t, name); err != nil && tctx.Err() == nil {
					d.log.Warn("member turn failed", "team", t.ID(), "member", name, "err", err)
				}
			})
		}
		timer.Reset(d.untilDeadline())
		select {
		case <-ctx.Done():
			return nil
		case <-d.cfg.Store.Ready():
		case <-timer.C:
		}
	}
}

// untilDeadline is how long until the earliest grace of a stopping member
// ends, over the loaded teams; an hour when none is stopping.
func (d *Driver) untilDeadline() time.Duration {
	wait := time.Hour
	for _, t := range d.cfg.Store.loaded() {
		if at, ok := t.NextDeadline(); ok {
			wait = min(wait, max(time.Until(at), time.Millisecond))
		}
	}
	return wait
}

// reap stops the stopping members whose grace ran out and cancels the
// turns they still run.
func (d *Driver) reap() {
	for _, t := range d.cfg.Store.loaded() {
		names, err := t.Reap()
		if err != nil {
			d.log.Warn("reap stopping members", "team", t.ID(), "err", err)
		}
		d.mu.Lock()
		for _, name := range names {
			if cancel := d.running[t.ID()+"/"+name]; cancel != nil {
				cancel()
			}
		}
		d.mu.Unlock()
	}
}

// queueOpenTurns queues the members whose last turn has no answer (the
// daemon stopped during it), so their turns go on without waiting for new
// mail; the store queued those with unread mail at load.
func (t *Team) queueOpenTurns() error {
	var errs []error
	for _, m := range t.Members() {
		if m.Status == StatusStopped {
			continue
		}
		evs, err := t.Events(m.Name, 0)
		if err == nil {
			var c conversation
			if c, err = rebuild(evs); err == nil && c.open {
				t.mu.Lock()
				mb := t.members[m.Name]
				mb.resume = true
				t.queueLocked(mb)
				t.mu.Unlock()
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// loaded returns the loaded teams, sorted by id.
func (s *Store) loaded() []*Team {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Team, 0, len(s.teams))
	for _, t := range s.teams {
		out = append(out, t)
	}
	return out
}

// The roles of a member's own log records, beside the chat roles.
const (
	senderInbox = "inbox" // the runs.Message that carries the mail a turn consumed
)

// conversation is a member's context rebuilt from its own log.
type conversation struct {
	msgs    []openai.ChatCompletionMessage
	turns   int             // user messages: the turns begun
	pending []runs.ToolCall // logged calls with no result yet (a crash mid-turn)
	open    bool            // the last turn has no final answer yet
	final   string          // the last turn's final answer, when it is the log's last record
	answer  string          // the latest final answer (the lead's: to the human)
	calls   int             // tool calls logged, for call ids
}

// rebuild reads a member's log into its conversation.
func rebuild(evs []runs.Event) (conversation, error) {
	var c conversation
	results := map[string]bool{}
	for _, ev := range evs {
		switch ev.Kind {
		case runs.KindMessage:
			m, err := runs.Decode[runs.Message](ev)
			if err != nil {
				return c, err
			}
			if m.Sender == senderInbox {
				c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: m.Content})
				c.turns++
				c.open, c.final = true, ""
				continue
			}
			c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Content})
			if m.Role == openai.ChatMessageRoleAssistant {
				c.open, c.final, c.answer = false, m.Content, m.Content
			}
		case runs.KindToolCall:
			tc, err := runs.Decode[runs.ToolCall](ev)
			if err != nil {
				return c, err
			}
			c.calls++
			last := len(c.msgs) - 1
			if last < 0 || c.msgs[last].Role != openai.ChatMessageRoleAssistant || c.msgs[last].ToolCalls == nil && c.msgs[last].Content != "" && !c.open {
				c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant})
				last++
			}
			c.msgs[last].ToolCalls = append(c.msgs[last].ToolCalls, openai.ToolCall{ID: tc.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: openaitools.LLMName(tc.Tool), Arguments: string(tc.Arguments)}})
			c.pending = append(c.pending, tc)
			c.open, c.final = true, ""
		case runs.KindToolResult:
			r, err := runs.Decode[runs.ToolResult](ev)
			if err != nil {
				return c, err
			}
			results[r.CallID] = true
			c.msgs = append(c.msgs, toolResultMessage(r))
			c.pending = slicesDeleteCall(c.pending, r.CallID)
		}
	}
	return c, nil
}

func slicesDeleteCall(cs []runs.ToolCall, id string) []runs.ToolCall {
	out := cs[:0]
	for _, c := range cs {
		if c.CallID != id {
			out = append(out, c)
		}
	}
	return out
}

// turn runs one turn of a member's loop: it logs the new mail with its
// consumption, then calls the model with the member's tools, logging
// every call before it is made and every result before the next model
// call, until the model answers in text.
func (d *Driver) turn(ctx context.Context, t *Team, name string) error {
	m, err := t.Member(name)
	if err != nil || m.Status == StatusStopped {
		return err
	}
	evs, err := t.Events(name, 0)
	if err != nil {
		return err
	}
	c, err := rebuild(evs)
	if err != nil {
		return fmt.Errorf("member %s log: %w", name, err)
	}
	if !c.open && c.final != "" {
		// The daemon may have died between logging the answer and sending
		// it: the send is idempotent by id, so send it again.
		d.deliverAnswer(t, m, c.turns, c.final)
	}
	mail, err := t.Inbox(name, 0)
	if err != nil {
		return err
	}
	if len(mail) > 0 {
		in := runs.Message{Sender: senderInbox, Role: openai.ChatMessageRoleUser, Content: formatMail(mail)}
		if err := t.Consume(name, mail, in); err != nil {
			return err
		}
		c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: in.Content})
		c.turns++
		c.open = true
	}
	if !c.open {
		return nil
	}
	prof, ok := d.cfg.Profiles.Get(m.Profile)
	if m.Profile == "" {
		prof, ok = d.cfg.Profiles.Get(d.cfg.Profiles.Default())
	}
	if !ok {
		return d.answer(t, m, c.turns, fmt.Sprintf("(%s cannot work: no agent profile named %q is loaded)", name, m.Profile))
	}
	tc := &toolCtx{d: d, t: t, name: name, calls: c.calls}
	// Resume: a call logged before a crash is answered now, without a
	// model call; a registry tool that is not idempotent is not made again.
	for _, call := range c.pending {
		res := tc.resumeCall(ctx, call)
		if err := tc.logResult(res); err != nil {
			return err
		}
		c.msgs = append(c.msgs, toolResultMessage(res))
	}
	query := ""
	if n := len(c.msgs); n > 0 {
		query = c.msgs[n-1].Content
	}
	for step := 0; ; step++ {
		if step >= prof.MaxSteps {
			return d.answer(t, m, c.turns, fmt.Sprintf("(%s reached its limit of %d model calls in one turn without an answer)", name, prof.MaxSteps))
		}
		if m, err = t.Member(name); err != nil || m.Status == StatusStopped {
			return err
		}
		if err := t.CheckBudget(name); err != nil {
			return nil // stopped, and the lead told, by RecordUsage
		}
		if d.cfg.Model == nil {
			return d.answer(t, m, c.turns, "(the team needs a model and the host has none: set --llm-model and --llm-base-url)")
		}
		tools := tc.tools(prof, m, query)
		req := openai.ChatCompletionRequest{Model: prof.Model, Tools: tools,
			Messages: append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: d.systemPrompt(t, m, prof)}}, c.msgs...)}
		if req.Model == "" {
			req.Model = d.cfg.DefaultModel
		}
		if prof.Temperature != nil {
			req.Temperature = *prof.Temperature
		}
		msg, usage, err := d.cfg.Model.Complete(ctx, req)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return d.answer(t, m, c.turns, fmt.Sprintf("(model call for %s failed: %v)", name, err))
		}
		if err := t.RecordUsage(name, int64(usage.PromptTokens+usage.CompletionTokens)); err != nil {
			if !errors.Is(err, ErrBudgetExceeded) {
				return err
			}
			return nil // over budget: stopped, and the lead told
		}
		if len(msg.ToolCalls) == 0 {
			return d.answer(t, m, c.turns, msg.Content)
		}
		assistant := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content}
		var batch []runs.Payload
		if msg.Content != "" {
			batch = append(batch, runs.Message{Sender: name, Role: "assistant_thought", Content: msg.Content})
		}
		var calls []runs.ToolCall
		for _, mc := range msg.ToolCalls {
			call := runs.ToolCall{CallID: tc.nextID(), Participant: name, Tool: openaitools.Qualified(mc.Function.Name), Arguments: openaitools.Arguments(mc.Function.Arguments)}
			calls = append(calls, call)
			batch = append(batch, call)
			assistant.ToolCalls = append(assistant.ToolCalls, openai.ToolCall{ID: call.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: mc.Function.Name, Arguments: mc.Function.Arguments}})
		}
		if err := t.Consume(name, nil, batch...); err != nil {
			return err
		}
		c.msgs = append(c.msgs, assistant)
		for _, call := range calls {
			res := tc.call(ctx, call)
			if ctx.Err() != nil {
				return ctx.Err() // the call stays pending in the log
			}
			if err := tc.logResult(res); err != nil {
				return err
			}
			c.msgs = append(c.msgs, toolResultMessage(res))
		}
		query = ""
	}
}

// answer logs the turn's final answer and sends it on: a teammate's to
// the lead; the lead's stays in its log for the human (the API shows it).
// A stopping member has ended its loop: it is stopped now.
func (d *Driver) answer(t *Team, m Member, turn int, text string) error {
	if err := t.Consume(m.Name, nil, runs.Message{Sender: m.Name, Role: openai.ChatMessageRoleAssistant, Content: text}); err != nil {
		return err
	}
	d.deliverAnswer(t, m, turn, text)
	return t.Finish(m.Name)
}

// deliverAnswer sends a teammate's final answer to the lead, with an id
// made of the turn so a resend after a crash is not a second message.
func (d *Driver) deliverAnswer(t *Team, m Member, turn int, text string) {
	if m.Lead || strings.TrimSpace(text) == "" {
		return
	}
	_, err := t.Send(Message{ID: fmt.Sprintf("%s-answer-%d", m.Name, turn), Type: TypeMessage, From: m.Name, To: t.Lead(), Content: text})
	if err != nil && !errors.As(err, new(*BounceError)) {
		d.log.Warn("send a member's answer to the lead", "team", t.ID(), "member", m.Name, "err", err)
	}
}

func (d *Driver) systemPrompt(t *Team, m Member, prof *agent.Profile) string {
	var b strings.Builder
	if s := strings.TrimSpace(prof.System); s != "" {
		b.WriteString(s + "\n\n")
	}
	if m.Lead {
		fmt.Fprintf(&b, "You are %s, the lead of team %s.", m.Name, t.ID())
		b.WriteString(" You spawn teammates, give them work with messages or tasks, and read what they send back. When you answer without a tool call, your answer goes to the human who runs the team.")
	} else {
		fmt.Fprintf(&b, "You are %s, a teammate of team %s led by %s.", m.Name, t.ID(), t.Lead())
		if m.Role != "" {
			fmt.Fprintf(&b, " Your role: %s.", m.Role)
		}
		b.WriteString(" When you answer without a tool call, your answer is sent to the lead.")
		if m.ReadOnly() {
			b.WriteString(" You are in plan mode: you have read-only tools until the lead approves your plan (request_plan_approval).")
		}
	}
	return b.String()
}

// formatMail is the user message of a turn: each message with its
// sender, type and request id, so the model knows who to answer and how.
func formatMail(msgs []Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%s from %s", m.Type, m.From)
		if m.RequestID != "" {
			fmt.Fprintf(&b, ", request_id %s", m.RequestID)
		}
		if m.Approve != nil {
			fmt.Fprintf(&b, ", approve %t", *m.Approve)
		}
		b.WriteString("] ")
		b.WriteString(m.Content)
		if m.Bounced != nil {
			fmt.Fprintf(&b, " (undelivered: %s to %s: %q)", m.Bounced.Type, m.Bounced.To, m.Bounced.Content)
		}
	}
	return b.String()
}

func toolResultMessage(r runs.ToolResult) openai.ChatCompletionMessage {
	content := string(r.Result)
	if r.Error != "" {
		content = string(mustJSON(map[string]any{"error": map[string]string{"code": r.ErrorCode, "message": r.Error}}))
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: r.CallID, Content: content}
}

// offer is a registry tool as the model is shown it.
func offer(t *registry.Tool) openai.Tool { return openaitools.Tool(t) }
