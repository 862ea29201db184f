package host

import (
	"fmt"
	"io"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/console"
	"github.com/skillhost/skillhost/pkg/events"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/mcp"
	"github.com/skillhost/skillhost/pkg/metrics"
	"github.com/skillhost/skillhost/pkg/registry"
)

// A Face is a way in to the host's tools that lives on its HTTP API: the
// MCP face, the agent loop and the console today; runs, teams and a fleet's
// control plane later. The host mounts each face once, in New, and stops it
// with itself. A face that needs more of the host's life implements the
// optional interfaces below; the host calls them in this order:
//
//	Mount (New) → Starter.Start (Start) → Drainer.Drain, io.Closer.Close (Shutdown)
//
// None of them is called concurrently with another of the same face.
type Face interface {
	// Name names the face in errors and the log.
	Name() string
	// Mount adds the face's routes with m.Handle and keeps what it needs
	// of m. It must not start work that outlives a failed New: that goes
	// in Start. An error fails New, which names the face.
	Mount(m *Mount) error
}

// A Starter is a Face with background work, started by Host.Start before
// the first scan and before the API serves. An error fails Start.
type Starter interface{ Start() error }

// A Drainer is a Face that holds long-lived requests (event streams).
// Drain runs when shutdown starts, before the HTTP server waits for every
// request to end: it ends those streams and refuses new ones, so that
// only real work holds a stop up.
type Drainer interface{ Drain() }

// A Face may also be an io.Closer: Close runs once the HTTP server has
// stopped, before the skills are drained, and its error is logged.
var (
	_ Drainer   = (*mcpFace)(nil)
	_ io.Closer = (*mcpFace)(nil)
)

// Mount is what a face may use of the host.
type Mount struct {
	Registry *registry.Registry
	Skills   *loader.Loader
	Events   *events.Bus
	Metrics  *metrics.Metrics
	Logger   hclog.Logger // named for the face
	// Ready is closed once the first scan after Start has settled (every
	// skill started or failed): work a face resumes at start waits for it.
	Ready <-chan struct{}
	api   *api.Server
}

// Handle routes pattern (net/http.ServeMux syntax) to h on the API, behind
// the same token and browser checks as every route.
func (m *Mount) Handle(pattern string, h http.Handler) { m.api.Handle(pattern, h) }

// builtinFaces are the faces cfg turns on, in mount order.
func builtinFaces(cfg Config) []Face {
	var fs []Face
	if cfg.MCP != nil {
		fs = append(fs, &mcpFace{cfg: *cfg.MCP})
	}
	if cfg.Agent != nil {
		fs = append(fs, &agentFace{cfg: *cfg.Agent})
	}
	if cfg.Runs != nil {
		fs = append(fs, &runsFace{cfg: *cfg.Runs, agent: cfg.Agent, stateDir: cfg.StateDir})
	}
	if cfg.Teams != nil {
		fs = append(fs, &teamsFace{cfg: *cfg.Teams, agent: cfg.Agent, stateDir: cfg.StateDir})
	}
	if cfg.Console {
		fs = append(fs, consoleFace{})
	}
	return append(fs, cfg.Faces...)
}

// mcpFace is MCP over streamable HTTP at /mcp.
type mcpFace struct {
	cfg MCPConfig
	srv *mcp.Server
}

func (f *mcpFace) Name() string { return "mcp" }

func (f *mcpFace) Mount(m *Mount) error {
	srv, err := mcp.New(mcp.Config{Registry: m.Registry, Skills: mcpSkills{m.Skills.Catalog()}, Logger: m.Logger,
		ShowUnavailable: f.cfg.ShowUnavailable, Discovery: f.cfg.Discovery})
	if err != nil {
		return err
	}
	f.srv = srv
	m.Handle("/mcp", srv.Handler())
	m.Logger.Debug("MCP face mounted", "path", "/mcp")
	return nil
}

// Drain ends the clients' event streams, which never end by themselves,
// and refuses new sessions; tool calls in flight go on.
func (f *mcpFace) Drain() { f.srv.Drain() }

// Close closes the sessions.
func (f *mcpFace) Close() error { return f.srv.Close() }

// agentFace is the agent loop at POST /v1/chat. It is mounted even without
// a model: the route then says what to configure instead of answering 404.
type agentFace struct{ cfg AgentConfig }

func (f *agentFace) Name() string { return "agent" }

func (f *agentFace) Mount(m *Mount) error {
	profiles := f.cfg.Profiles
	if profiles == nil {
		profiles = agent.DefaultProfiles()
	}
	a, err := agent.New(agent.Config{
		Registry: m.Registry, Skills: m.Skills.Catalog(), Profiles: profiles, BaseURL: f.cfg.BaseURL, APIKey: f.cfg.APIKey, Model: f.cfg.Model, Logger: m.Logger,
	})
	if err != nil {
		return err
	}
	m.Handle("POST /v1/chat", a.Handler())
	if err := m.Metrics.Register(a.Collectors()...); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if a.Configured() {
		m.Logger.Info("agent loop ready", "base_url", a.BaseURL(), "model", f.cfg.Model,
			"profiles", profiles.Names(), "default_profile", profiles.Default(), "api_key", f.cfg.APIKey != "")
	} else {
		m.Logger.Info("agent loop has no model: POST /v1/chat answers agent_unconfigured; set --llm-model (and --llm-base-url)",
			"profiles", profiles.Names())
	}
	return nil
}

// consoleFace is the operator console: static files at /ui/ (see
// docs/console.md). The files hold no data, so the token check lets GET
// /ui/ through; the page sends the token on every API call it makes.
type consoleFace struct{}

func (consoleFace) Name() string { return "console" }

func (consoleFace) Mount(m *Mount) error {
	m.Handle("GET "+console.Prefix, console.Handler())
	return nil
}
