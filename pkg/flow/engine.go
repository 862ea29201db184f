package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// Model is what the engine needs of a language model: one chat completion
// with tools, not streamed, returning the message (text or tool calls) and
// its token usage. It must honour ctx: a stopped run cancels it. It is
// called from one goroutine per run, several runs at once.
// *agent.ChatClient satisfies it.
type Model interface {
	Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error)
}

var _ Model = (*agent.ChatClient)(nil)

// Stop reasons the engine adds to the termination conditions' own.
const (
	ReasonSelectorFailed = "selector_failed"
	ReasonReplyFailed    = "reply_failed"
	ReasonNoNextHop      = "no_next_hop"
)

// EngineConfig is what an Engine runs flows with. Store, Registry and
// Profiles are required.
type EngineConfig struct {
	Store    *runs.Store
	Registry *registry.Registry
	Profiles *agent.Profiles
	// Model answers agent participants and the selector. Without one, a
	// run that needs a model stops with stop reason error, saying so.
	Model Model
	// DefaultModel is the model of every profile that names none.
	DefaultModel string
	// Flows are the flows runs may name; SetFlows replaces them.
	Flows  *Set
	Logger hclog.Logger
	// Observer, when set, is told of rounds, usage and stops (metrics).
	Observer Observer
	// Now is the clock of time limits, measured from the run's first
	// event; time.Now when nil.
	Now func() time.Time
}

// Observer receives what a metrics collector counts. Its methods must be
// quick and safe for concurrent use.
type Observer interface {
	Round(flow string)
	Usage(flow, participant string, prompt, completion int64)
	Stopped(flow, reason string)
}

// Engine runs flows: one goroutine per run that is running, none for a run
// that waits for a human or has stopped. Everything a run does is in its
// log first (package runs), and every drive of a run starts by reading its
// log, so a resume after a crash, a wake-up after human input and a first
// start are one code path.
type Engine struct {
	cfg   EngineConfig
	log   hclog.Logger
	flows atomic.Pointer[Set]

	ctx    context.Context // ends at Close: cancels every run's calls
	cancel context.CancelFunc

	mu      sync.Mutex         // guards active and closed
	active  map[string]*driver // runs with a goroutine, by id
	closed  bool
	drivers sync.WaitGroup
}

// NewEngine checks cfg and returns an engine. It starts nothing: Resume
// picks up unfinished runs.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("EngineConfig.Store is required"))
	}
	if cfg.Registry == nil {
		errs = append(errs, errors.New("EngineConfig.Registry is required"))
	}
	if cfg.Profiles == nil {
		errs = append(errs, errors.New("EngineConfig.Profiles is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("flow engine: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, active: map[string]*driver{}}
	if cfg.Flows == nil {
		cfg.Flows = &Set{byName: map[string]*Flow{}}
	}
	e.flows.Store(cfg.Flows)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

// Flows returns the current flows.
func (e *Engine) Flows() *Set { return e.flows.Load() }

// SetFlows replaces the flows. Running runs keep the flow they started
// with until they next wait or the host restarts.
func (e *Engine) SetFlows(s *Set) { e.flows.Store(s) }

// Store is the engine's run store.
func (e *Engine) Store() *runs.Store { return e.cfg.Store }

// Errors of the engine's API, tested with errors.Is.
var (
	ErrUnknownFlow = errors.New("unknown flow")
	ErrClosed      = errors.New("flow engine is closed")
	ErrEmptyInput  = errors.New("is empty")
)

// startInput is what a run's started event keeps of its request.
type startInput struct {
	Task string `json:"task"`
}

// Start creates a run of the named flow on task and starts driving it. The
// run's started event is durable when Start returns.
func (e *Engine) Start(flowName, task string) (*runs.Run, error) {
	if _, ok := e.Flows().Get(flowName); !ok {
		return nil, fmt.Errorf("flow %q: %w (flows: %s)", flowName, ErrUnknownFlow, strings.Join(e.Flows().Names(), ", "))
	}
	if strings.TrimSpace(task) == "" {
		return nil, fmt.Errorf("the task (input) %w", ErrEmptyInput)
	}
	in, _ := json.Marshal(startInput{Task: task})
	r, err := e.cfg.Store.Create(runs.Started{Type: "flow", Name: flowName, Input: in})
	if err != nil {
		return nil, err
	}
	if err := e.launch(r); err != nil {
		return r, err
	}
	return r, nil
}

// Stop ends the run with stop reason external_stop. Its in-flight model
// and tool calls are cancelled (the driver watches the run's Done).
func (e *Engine) Stop(id, detail string) error {
	r, err := e.cfg.Store.Run(id)
	if err != nil {
		return err
	}
	if detail == "" {
		detail = "stopped through the API"
	}
	if err := r.Stop(runs.StopExternal, detail); err != nil {
		return err
	}
	e.observeStop(r.Summary().Name, runs.StopExternal)
	return nil
}

// Input posts the human's message into a run that waits for it and wakes
// the run; it returns the seq of the message's event. The error wraps
// runs.ErrNotWaiting when the run does not wait.
func (e *Engine) Input(id, text string) (uint64, error) {
	r, err := e.cfg.Store.Run(id)
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(text) == "" {
		return 0, fmt.Errorf("the message %w", ErrEmptyInput)
	}
	sender := "human"
	if f, ok := e.Flows().Get(r.Summary().Name); ok && f.Human() != "" {
		sender = f.Human()
	}
	evs, err := r.Append(runs.HumanInput{Sender: sender, Content: text})
	if err != nil {
		return 0, err
	}
	return evs[0].Seq, e.launch(r)
}

// Resume starts a driver for every unfinished run that is not waiting
// for a human: after a restart, the runs pick up where their logs end.
// Runs that fail to load are reported together; the others resume.
func (e *Engine) Resume() error {
	rs, err := e.cfg.Store.Unfinished()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range rs {
		if r.Status() != runs.StatusRunning {
			continue
		}
		e.log.Info("resuming run", "run", r.ID(), "flow", r.Summary().Name)
		if err := e.launch(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close cancels every running run's calls and waits for the drivers to
// return. The runs stay unfinished in their logs, to be resumed by the
// next engine. Safe to call twice.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.drivers.Wait()
}

// launch starts r's driver, or asks the running one to read the log again
// once it is done (an input that arrived while it was winding down).
func (e *Engine) launch(r *runs.Run) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if d, ok := e.active[r.ID()]; ok {
		d.again = true
		return nil
	}
	d := &driver{e: e, run: r}
	e.active[r.ID()] = d
	e.drivers.Add(1)
	go func() {
		defer e.drivers.Done()
		for {
			d.drive()
			e.mu.Lock()
			if d.again && !e.closed {
				d.again = false
				e.mu.Unlock()
				continue
			}
			delete(e.active, r.ID())
			e.mu.Unlock()
			return
		}
	}()
	return nil
}

func (e *Engine) observeStop(flow, reason string) {
	if e.cfg.Observer != nil {
		e.cfg.Observer.Stopped(flow, reason)
	}
}

// Active is how many runs have a driver goroutine now. A run waiting for a
// human has none.
func (e *Engine) Active() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.active)
}
