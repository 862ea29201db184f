package host

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/mcp"
	"github.com/skillhost/skillhost/pkg/mcprt"
	"github.com/skillhost/skillhost/pkg/registry/embed"
)

// Config is the whole daemon. The zero value of every field but Skills is
// a documented default; the defaults of the loader's fields are the
// loader's (pkg/loader.Config). Booleans default to off, so that a host a
// library or a test builds changes nothing it was not asked to: host serve
// turns on what its flags say.
type Config struct {
	// Skills is the skills tree to serve. Required.
	Skills string
	// Logger receives the host's log. Default: none.
	Logger hclog.Logger

	// Listen is where the HTTP API listens: host:port, or unix:/path for a
	// socket only its owner may connect to. An address that is not
	// loopback needs a token (Tokens). Empty: no HTTP API, and no face
	// mounted on it (host mcp embeds a host so).
	Listen string
	// Tokens guard the API when set: Admin may do everything, Invoke may
	// read and call tools. They must differ.
	Tokens api.Tokens
	// ReadHeaderTimeout and ReadTimeout bound how long a client may take to
	// send a request's headers and the whole request. Defaults 10 s, 1 min.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// AddrFile, when set, receives the bound listen address once the first
	// scan has settled (as /readyz reports) and is removed at stop, for
	// scripts and tests that listen on port 0.
	AddrFile string

	// StateDir, when set, is the folder of the operator decisions (disable,
	// pin) that persist across restarts. Default: decisions last as long as
	// the host.
	StateDir string
	// State, when set, keeps the operator decisions in place of StateDir's
	// file: the seam for a store shared by several hosts.
	State loader.StateStore
	// Fleet, when set, keeps the operator decisions in etcd, shared by
	// every host of the fleet, registers this host there and mounts GET
	// /v1/fleet. It replaces StateDir's file; State must be unset.
	// Default: one host on its own.
	Fleet *FleetConfig
	// DigestCache is a file that keeps the entrypoints' digests across
	// restarts (loader.Config.DigestCache). Default: memory only.
	DigestCache string

	// The loader's settings: see loader.Config, whose defaults apply.
	RunDir            string
	Grace             time.Duration // also bounds Shutdown; default 30 s
	StartTimeout      time.Duration
	Debounce, Resync  time.Duration
	MaxParallelStarts int
	SkillGOMAXPROCS   int
	StrictModes       bool
	Watch             bool
	// SkillUser is the account every skill runs as (a name, a uid or
	// uid:gid; proc.LookupSkillUser). Default: the host's own.
	SkillUser string
	// Interpreters is the operator's allow map for skills whose manifest
	// says "runtime": "mcp": the only host programs such a manifest can
	// name as its command, by a logical name (node → /usr/bin/node). A
	// version naming another fails with a named error; others are
	// unaffected. It is a flag.Value, for a repeated --runtime name=/path.
	Interpreters Interpreters

	// OwnsProcess says the host is the whole program (host serve, host
	// mcp), so it may change its process: it makes it non-dumpable
	// (proc.Harden), starts the skills' watchdog (proc.ReaperCommand: the
	// binary's main must call proc.MaybeRunReaper first) and makes it a
	// child subreaper whose orphan sweeper kills what skills leave behind.
	// Default off: a library user or a test binary keeps its process as it
	// was, and a host then guards its skills with their process groups and
	// parent-death signal alone.
	OwnsProcess bool

	// Embed turns on the embedding rerank of tool search. Default: text
	// ranking only.
	Embed *EmbedConfig
	// MCP mounts the MCP face at /mcp. Default: none.
	MCP *MCPConfig
	// Agent mounts the agent loop at POST /v1/chat, and its counters on
	// /metrics. Default: none.
	Agent *AgentConfig
	// Runs mounts the multi-agent runs at /v1/runs and /v1/flows, with the
	// profiles and model of Agent, logged under StateDir (required).
	// Unfinished runs resume once the skills are loaded. Default: none.
	Runs *RunsConfig
	// Teams mounts the agent teams at /v1/teams and runs their members'
	// loops, with the profiles and model of Agent, under StateDir
	// (required). Teams resume once the skills are loaded. Default: none.
	Teams *TeamsConfig
	// Console serves the operator console at /ui/. Default off.
	Console bool
	// Faces are more ways in, mounted after the ones above, in order.
	Faces []Face
}

// EmbedConfig is the embedding rerank of search (registry/embed).
type EmbedConfig struct {
	embed.Config
	// Warm embeds new tools in the background as skills load, so that a
	// search embeds only its query. Default off.
	Warm bool
}

// MCPConfig is the MCP face over streamable HTTP.
type MCPConfig struct {
	// ShowUnavailable lists the tools of a skill restarting after a crash,
	// marked unavailable, instead of leaving them out until it is back.
	ShowUnavailable bool
	// Discovery is the mode of /mcp when its URL does not choose one
	// (?discovery=search or off): see mcp.Config.Discovery. Default off.
	Discovery mcp.Discovery
}

// AgentConfig is the agent loop behind POST /v1/chat (pkg/agent).
type AgentConfig struct {
	// BaseURL is the model's OpenAI-compatible API root. Default
	// agent.DefaultBaseURL.
	BaseURL string
	// Model is the model of every profile that names none. Without one the
	// route answers agent_unconfigured, saying what to set.
	Model string
	// APIKey goes to BaseURL and nowhere else.
	APIKey string
	// Profiles are the agent kinds a run may name. Default
	// agent.DefaultProfiles: one read-only profile over every tool.
	Profiles *agent.Profiles
}

// withDefaults fills the host's own defaults; the loader fills its own.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = time.Minute
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Second
	}
	return c
}

// Interpreters is mcprt.Interpreters, here so that cmd/host can fill it from
// its flags without importing the runtime.
type Interpreters = mcprt.Interpreters
