package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// answer is one scripted model answer: a message, or an error, or a
// function that makes one (it may block on ctx).
type answer struct {
	msg   openai.ChatCompletionMessage
	err   error
	usage int // prompt and completion tokens each; default 10
	fn    func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error)
}

func say(s string) answer {
	return answer{msg: openai.ChatCompletionMessage{Role: "assistant", Content: s}}
}

func call(name, args string) answer {
	return answer{msg: openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{
		{ID: "model-id", Type: "function", Function: openai.FunctionCall{Name: name, Arguments: args}}}}}
}

func pick(speaker, reason string) answer {
	b, _ := json.Marshal(map[string]string{"speaker": speaker, "reason": reason})
	return call(selectFunction, string(b))
}

// scripted is a Model that answers each participant from its own queue,
// recognizing the asker by the system prompt the engine writes.
type scripted struct {
	t *testing.T

	mu     sync.Mutex // guards the fields below
	queues map[string][]answer
	reqs   map[string][]openai.ChatCompletionRequest
}

func newScripted(t *testing.T, queues map[string][]answer) *scripted {
	return &scripted{t: t, queues: queues, reqs: map[string][]openai.ChatCompletionRequest{}}
}

var askerRE = regexp.MustCompile(`You are ([a-z0-9_-]+), one of the participants`)

// asker names who a request is for: a participant, or "selector".
func asker(req openai.ChatCompletionRequest) string {
	sys := req.Messages[0].Content
	if strings.Contains(sys, "You choose who speaks next") {
		return "selector"
	}
	if m := askerRE.FindStringSubmatch(sys); m != nil {
		return m[1]
	}
	return "?"
}

func (s *scripted) Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	who := asker(req)
	s.mu.Lock()
	s.reqs[who] = append(s.reqs[who], req)
	q := s.queues[who]
	if len(q) == 0 {
		s.mu.Unlock()
		s.t.Errorf("scripted model: no answer left for %s", who)
		return openai.ChatCompletionMessage{}, openai.Usage{}, errors.New("script exhausted for " + who)
	}
	a := q[0]
	s.queues[who] = q[1:]
	s.mu.Unlock()
	n := a.usage
	if n == 0 {
		n = 10
	}
	usage := openai.Usage{PromptTokens: n, CompletionTokens: n, TotalTokens: 2 * n}
	if a.fn != nil {
		m, err := a.fn(ctx, req)
		return m, usage, err
	}
	return a.msg, usage, a.err
}

func (s *scripted) requests(who string) []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.reqs[who]...)
}

// utilBackend serves the in-process skill "util": count (counts its calls),
// echo (idempotent) and block (waits for its context, announcing start).
type utilBackend struct {
	count   atomic.Int64
	blocked chan struct{} // receives when block starts
	ended   chan error    // receives block's context error
}

func (b *utilBackend) Acquire() bool { return true }
func (b *utilBackend) Release()      {}
func (b *utilBackend) Invoke(ctx context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	switch tool {
	case "count":
		return fmt.Appendf(nil, `{"count":%d}`, b.count.Add(1)), nil
	case "echo":
		return args, nil
	case "block":
		b.blocked <- struct{}{}
		<-ctx.Done()
		b.ended <- ctx.Err()
		return nil, ctx.Err()
	}
	return nil, registry.Errorf(registry.CodeUnknownTool, "no tool %s", tool)
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)

func newUtilRegistry(t *testing.T) (*registry.Registry, *utilBackend) {
	t.Helper()
	b := &utilBackend{blocked: make(chan struct{}, 1), ended: make(chan error, 1)}
	reg := registry.New(registry.Config{})
	ro := registry.Annotations{ReadOnly: true}
	_, err := reg.Put(registry.SkillSpec{Name: "util", Version: "1.0.0", Description: "Test utilities.", Backend: b,
		Tools: []registry.ToolSpec{
			{Name: "count", Description: "Count a call and return the count.", InputSchema: objectSchema, Annotations: ro},
			{Name: "echo", Description: "Echo the arguments back.", InputSchema: objectSchema, Annotations: registry.Annotations{ReadOnly: true, Idempotent: true}},
			{Name: "block", Description: "Block until cancelled.", InputSchema: objectSchema, Annotations: ro},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return reg, b
}

const testProfilesYAML = `
default: admin
profiles:
  admin: {system: You lead., max_steps: 4}
  coder: {system: You write code., max_steps: 4}
  reviewer: {system: You review.}
`

// harness is an engine over a temporary state folder.
type harness struct {
	t     *testing.T
	dir   string
	store *runs.Store
	eng   *Engine
	model *scripted
	util  *utilBackend
	reg   *registry.Registry
}

func newHarness(t *testing.T, flowDoc string, queues map[string][]answer) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), model: newScripted(t, queues)}
	h.reg, h.util = newUtilRegistry(t)
	h.open(flowDoc)
	return h
}

// open (re)opens the store and an engine on h.dir: a restart.
func (h *harness) open(flowDoc string) {
	t := h.t
	t.Helper()
	profiles, err := agent.ParseProfiles([]byte(testProfilesYAML), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("test", []byte(flowDoc), "yaml", profiles)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if h.store, err = runs.Open(runs.Config{Dir: h.dir}); err != nil {
		t.Fatal(err)
	}
	h.eng, err = NewEngine(EngineConfig{Store: h.store, Registry: h.reg, Profiles: profiles, Model: h.model,
		DefaultModel: "test-model", Flows: NewSet(f)})
	if err != nil {
		t.Fatal(err)
	}
	eng, store := h.eng, h.store
	t.Cleanup(func() {
		eng.Close()
		store.Close()
	})
}

// close stops the engine and store (the restart's first half).
func (h *harness) close() {
	h.eng.Close()
	h.store.Close()
}

func (h *harness) start(task string) *runs.Run {
	h.t.Helper()
	r, err := h.eng.Start("test", task)
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	return r
}

// wait waits for the run to stop and returns its summary.
func (h *harness) wait(r *runs.Run) runs.Summary {
	h.t.Helper()
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		h.t.Fatalf("run %s did not stop; summary %+v", r.ID(), r.Summary())
	}
	return r.Summary()
}

// waitFor follows the run's events until one of kind is logged.
func (h *harness) waitFor(r *runs.Run, kind runs.Kind) runs.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub := r.Subscribe(0)
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			h.t.Fatalf("run %s stopped before a %s event: %+v", r.ID(), kind, r.Summary())
		}
		if err != nil {
			h.t.Fatalf("waiting for %s: %v", kind, err)
		}
		if ev.Kind == kind {
			return ev
		}
	}
}

// events returns the run's events.
func events(t *testing.T, r *runs.Run) []runs.Event {
	t.Helper()
	evs, err := r.Events(0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// kinds lists the run's event kinds.
func kinds(t *testing.T, r *runs.Run) []runs.Kind {
	var out []runs.Kind
	for _, ev := range events(t, r) {
		out = append(out, ev.Kind)
	}
	return out
}

// choices lists the run's speaker choices.
func choices(t *testing.T, r *runs.Run) []runs.SpeakerChoice {
	var out []runs.SpeakerChoice
	for _, ev := range events(t, r) {
		if c, err := runs.Decode[runs.SpeakerChoice](ev); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func speakers(sum runs.Summary) string {
	var s []string
	for _, m := range sum.Transcript {
		s = append(s, m.Sender)
	}
	return strings.Join(s, ",")
}
