package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/skills"
)

// DefaultBaseURL is OpenAI's API, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures an Agent. Registry is required; zero values elsewhere
// take the documented defaults.
type Config struct {
	Registry *registry.Registry
	// Profiles are the agent kinds runs may name. Default: DefaultProfiles.
	Profiles *Profiles
	// Skills is the catalog of Agent Skills (the loader's), offered to models as a short
	// catalog with activate_skill (see disclose.go). Nil: no skills.
	Skills *skills.Catalog

	// BaseURL is the OpenAI-compatible API root, e.g.
	// http://127.0.0.1:11434/v1 for Ollama. Default DefaultBaseURL.
	BaseURL string
	// APIKey is sent to BaseURL as a bearer token and nowhere else; empty
	// sends none (Ollama needs none). It is never logged.
	APIKey string
	// Model is the model of every profile that names none. With neither,
	// runs fail with agent_unconfigured.
	Model string
	// HTTPClient reaches the model endpoint. Default: a client without a
	// timeout (each attempt has RetryPolicy.AttemptTimeout).
	HTTPClient *http.Client
	Retry      RetryPolicy

	// Timeout bounds a whole run, sub-agents included. Default 5 min.
	Timeout time.Duration
	// MaxParallelCalls bounds the tool calls of one turn that run at once.
	// Default 8.
	MaxParallelCalls int
	// MaxBodyBytes caps a POST /v1/chat body. Default 1 MiB.
	MaxBodyBytes int64
	// Heartbeat is the period of the comment lines that keep an idle
	// event stream open through proxies. Default 15 s.
	Heartbeat time.Duration

	Logger hclog.Logger
}

// Agent runs the loop. It is safe for concurrent use; runs share nothing
// but the registry and the cumulative Stats.
type Agent struct {
	cfg   Config
	model *model
	log   hclog.Logger
	stats stats
}

// New checks cfg and returns an Agent. A missing model is not an error: the
// handler then answers agent_unconfigured, which says what to set.
func New(cfg Config) (*Agent, error) {
	if cfg.Registry == nil {
		return nil, errors.New("agent: Config.Registry is required")
	}
	if cfg.Profiles == nil {
		cfg.Profiles = DefaultProfiles()
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL = u
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MaxParallelCalls <= 0 {
		cfg.MaxParallelCalls = 8
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	cfg.Retry = cfg.Retry.withDefaults()
	return &Agent{
		cfg: cfg, log: cfg.Logger,
		model: newModel(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient, cfg.Retry),
	}, nil
}

func parseBaseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("agent: model base URL %q must be an http:// or https:// URL such as http://127.0.0.1:11434/v1", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// Configured reports whether runs of the default profile have a model.
func (a *Agent) Configured() bool {
	p, _ := a.cfg.Profiles.Get("")
	return a.modelFor(p) != ""
}

// Profiles returns the agent's profiles.
func (a *Agent) Profiles() *Profiles { return a.cfg.Profiles }

// BaseURL is the model endpoint, with any user:password@ removed, for logs.
func (a *Agent) BaseURL() string {
	u, err := url.Parse(a.cfg.BaseURL)
	if err != nil {
		return ""
	}
	return u.Redacted()
}

func (a *Agent) modelFor(p *Profile) string {
	if p != nil && p.Model != "" {
		return p.Model
	}
	return a.cfg.Model
}

// Message is one message of the conversation a caller sends: "user" or
// "assistant". The system prompt is the profile's.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one run: POST /v1/chat's body.
type Request struct {
	Profile  string    `json:"profile,omitempty"` // "" runs the default profile
	Messages []Message `json:"messages"`
	// Stream asks the model for a streamed answer, so text deltas reach
	// Run's emit function (and the HTTP client) as they arrive.
	Stream bool `json:"stream,omitempty"`
}

// MaxMessages bounds the messages of a request.
const MaxMessages = 256

func (req *Request) validate() error {
	if len(req.Messages) == 0 {
		return registry.Errorf(registry.CodeBadRequest, "messages is empty: send at least one {\"role\": \"user\", \"content\": \"...\"}")
	}
	if len(req.Messages) > MaxMessages {
		return registry.Errorf(registry.CodeBadRequest, "%d messages is over the limit of %d", len(req.Messages), MaxMessages)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "user", "assistant":
		default:
			return registry.Errorf(registry.CodeBadRequest, "messages[%d].role is %q; want \"user\" or \"assistant\" (the system prompt comes from the profile)", i, m.Role).
				With("index", i)
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" || strings.TrimSpace(last.Content) == "" {
		return registry.Errorf(registry.CodeBadRequest, "the last message must be a non-empty user message")
	}
	return nil
}

// Response is the outcome of a run.
type Response struct {
	Profile string `json:"profile"`
	Model   string `json:"model"`
	Answer  string `json:"answer"`
	// FinishReason is "stop" (the model answered), "step_limit" (the
	// profile's max_steps ran out first), or the model's own reason
	// ("length", "content_filter").
	FinishReason string `json:"finish_reason"`
	Steps        int    `json:"steps"` // model calls of the top-level run
	// ToolsOffered are the LLM-facing names of the tools the top-level
	// run sent to the model.
	ToolsOffered []string `json:"tools_offered"`
	// ToolCalls lists every call, sub-agents' included (see Depth), in
	// the order they were asked for within each run.
	ToolCalls []ToolCall `json:"tool_calls"`
	// Skills maps each skill that served a call to its version.
	Skills     map[string]string `json:"skills"`
	Usage      Usage             `json:"usage"`
	Counters   Counters          `json:"counters"`
	Notes      []string          `json:"notes,omitempty"` // what the caller should know: fallbacks, limits
	DurationMS float64           `json:"duration_ms"`
}

// ToolCall is one tool call the model asked for.
type ToolCall struct {
	ID      string `json:"id"`
	Name    string `json:"name"`           // as the model named it
	Tool    string `json:"tool,omitempty"` // the qualified name, skill.tool, when it is a registered tool
	Profile string `json:"profile"`
	Depth   int    `json:"depth"`
	// Arguments as the model sent them: the JSON object, or a JSON string
	// holding what was not valid JSON.
	Arguments json.RawMessage `json:"arguments"`
	OK        bool            `json:"ok"`
	Summary   string          `json:"result_summary,omitempty"` // the result's first characters
	Error     *registry.Error `json:"error,omitempty"`
	Skill     string          `json:"skill,omitempty"`
	Version   string          `json:"version,omitempty"`
	// DurationMS is how long the call took; for a delegate call, the
	// whole sub-agent run.
	DurationMS float64 `json:"duration_ms"`
}

// Usage adds up the token counts the endpoint reported, and the largest
// prompt estimate sent.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// EstimatedPromptTokens is the largest prompt estimate of the run,
	// the number the context budget is checked against.
	EstimatedPromptTokens int `json:"estimated_prompt_tokens"`
}

// Counters count what went wrong in a run, and what the model did about it.
type Counters struct {
	ModelCalls       int `json:"model_calls"`
	ModelRetries     int `json:"model_retries"`
	ToolCalls        int `json:"tool_calls"`
	InventedTools    int `json:"invented_tools"`    // calls to a tool the run did not offer
	InvalidArguments int `json:"invalid_arguments"` // arguments not JSON, or failing the schema
	ToolErrors       int `json:"tool_errors"`       // other failed calls
	Delegations      int `json:"delegations"`
	SkillActivations int `json:"skill_activations,omitempty"` // activate_skill calls that returned instructions
	ToolSearches     int `json:"tool_searches,omitempty"`     // search_tools calls
}

// Stats are an Agent's cumulative counters, for metrics.
type Stats struct {
	Runs       int64 `json:"runs"`
	RunsFailed int64 `json:"runs_failed"`
	Counters
}

type stats struct {
	mu sync.Mutex // guards s
	s  Stats
}

// Stats returns the cumulative counters of every finished run.
func (a *Agent) Stats() Stats {
	a.stats.mu.Lock()
	defer a.stats.mu.Unlock()
	return a.stats.s
}

func (a *Agent) account(c Counters, failed bool) {
	a.stats.mu.Lock()
	defer a.stats.mu.Unlock()
	s := &a.stats.s
	s.Runs++
	if failed {
		s.RunsFailed++
	}
	s.ModelCalls += c.ModelCalls
	s.ModelRetries += c.ModelRetries
	s.ToolCalls += c.ToolCalls
	s.InventedTools += c.InventedTools
	s.InvalidArguments += c.InvalidArguments
	s.ToolErrors += c.ToolErrors
	s.Delegations += c.Delegations
	s.SkillActivations += c.SkillActivations
	s.ToolSearches += c.ToolSearches
}

var runSeq atomic.Uint64

// Run runs req to its end. emit, if not nil, receives the run's events as
// they happen; calls to it never overlap, and it must not block for long
// (tool calls wait for it). Every error is an *registry.Error.
func (a *Agent) Run(ctx context.Context, req Request, emit func(Event)) (*Response, error) {
	start := time.Now()
	if err := req.validate(); err != nil {
		return nil, err
	}
	p, ok := a.cfg.Profiles.Get(req.Profile)
	if !ok {
		return nil, registry.Errorf(registry.CodeBadRequest, "no profile named %q; the profiles are %s", req.Profile, strings.Join(a.cfg.Profiles.Names(), ", ")).
			With("profiles", a.cfg.Profiles.Names())
	}
	modelName := a.modelFor(p)
	if modelName == "" {
		return nil, agentError(CodeUnconfigured, false, "no model is configured for profile %s: start the host with --llm-model (and --llm-base-url for a local endpoint such as Ollama), or set model in the profile", p.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	r := &run{a: a, stream: req.Stream, emitFn: emit, skills: map[string]string{}, id: runSeq.Add(1)}
	s, err := r.newSession(ctx, p, 0, "", req.Messages)
	if err != nil {
		return nil, err
	}
	out, err := s.loop(ctx)
	r.mu.Lock()
	counters := r.counters
	r.mu.Unlock()
	a.account(counters, err != nil)
	if err != nil {
		e := registry.AsError(err)
		a.log.Warn("agent run failed", "run", r.id, "profile", p.Name, "model", modelName, "steps", s.steps,
			"tool_calls", counters.ToolCalls, "code", e.Code, "error", e.Message)
		return nil, e
	}
	resp := &Response{
		Profile: p.Name, Model: modelName, Answer: out.answer, FinishReason: out.finish, Steps: s.steps,
		ToolsOffered: s.offeredNames(), Skills: r.skills, Usage: r.usage, Counters: counters, Notes: r.notes,
		DurationMS: ms(time.Since(start)),
	}
	resp.ToolCalls = make([]ToolCall, 0, len(r.calls))
	for _, c := range r.calls {
		resp.ToolCalls = append(resp.ToolCalls, *c)
	}
	a.log.Info("agent run", "run", r.id, "profile", p.Name, "model", modelName, "steps", s.steps,
		"tool_calls", counters.ToolCalls, "finish", out.finish, "took", time.Since(start).Round(time.Millisecond))
	return resp, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ReadKeyFile reads an API key file: the first line, trimmed. Like the API
// token, it must not be readable by group or others.
func ReadKeyFile(path string) (string, error) { return fileio.ReadSecret(path, "key file") }
