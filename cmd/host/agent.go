package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"flag"
	"os"

	"github.com/skillhost/skillhost/pkg/agent"
)

// agentOpts holds the agent mount's flags between parsing and setup.
var agentOpts struct {
	baseURL, model, keyFile, agents string
}

func init() {
	mounts = append(mounts, mount{name: "agent", flags: agentFlags, setup: setupAgent})
}

func agentFlags(fs *flag.FlagSet) {
	fs.StringVar(&agentOpts.baseURL, "llm-base-url", envOr("SKILLHOST_LLM_BASE_URL", agent.DefaultBaseURL),
		"OpenAI-compatible API root of the model behind POST /v1/chat, e.g. http://127.0.0.1:11434/v1 for Ollama (env SKILLHOST_LLM_BASE_URL)")
	fs.StringVar(&agentOpts.model, "llm-model", os.Getenv("SKILLHOST_LLM_MODEL"),
		"model of the agent loop, e.g. qwen2.5; without it (or a model in the profile) POST /v1/chat answers 503 agent_unconfigured (env SKILLHOST_LLM_MODEL)")
	fs.StringVar(&agentOpts.keyFile, "llm-key-file", os.Getenv("SKILLHOST_LLM_KEY_FILE"),
		"file holding the model's API key, mode 600 (default: env OPENAI_API_KEY; a local endpoint may need none)")
	fs.StringVar(&agentOpts.agents, "agents", os.Getenv("SKILLHOST_AGENTS"),
		"agent profiles, a JSON or YAML file (see examples/agents.json); default: one read-only profile over every tool (env SKILLHOST_AGENTS)")
}

// setupAgent mounts POST /v1/chat. It always mounts it: without a model the
// route explains what to configure instead of answering 404.
func setupAgent(d *daemon) error {
	key := os.Getenv("OPENAI_API_KEY")
	if agentOpts.keyFile != "" {
		k, err := agent.ReadKeyFile(agentOpts.keyFile)
		if err != nil {
			return err
		}
		key = k
	}
	profiles := agent.DefaultProfiles()
	if agentOpts.agents != "" {
		ps, err := agent.LoadProfiles(agentOpts.agents)
		if err != nil {
			return err
		}
		profiles = ps
	}
	log := d.Log.Named("agent")
	a, err := agent.New(agent.Config{
		Registry: d.Registry, Profiles: profiles, BaseURL: agentOpts.baseURL, APIKey: key, Model: agentOpts.model, Logger: log,
	})
	if err != nil {
		return err
	}
	d.Server.Handle("POST /v1/chat", a.Handler())
	if err := d.Metrics.Register(agentCounters(a)...); err != nil {
		return err
	}
	if a.Configured() {
		log.Info("agent loop ready", "base_url", a.BaseURL(), "model", agentOpts.model,
			"profiles", profiles.Names(), "default_profile", profiles.Default(), "api_key", key != "")
	} else {
		log.Info("agent loop has no model: POST /v1/chat answers agent_unconfigured; set --llm-model (and --llm-base-url)",
			"profiles", profiles.Names())
	}
	return nil
}

// agentCounters exposes the loop's cumulative counters on /metrics,
// including the calls a model got wrong (invented tools, bad arguments).
func agentCounters(a *agent.Agent) []prometheus.Collector {
	counter := func(name, help string, read func(agent.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "skillhost_agent_" + name, Help: help},
			func() float64 { return float64(read(a.Stats())) })
	}
	return []prometheus.Collector{
		counter("runs_total", "Agent runs finished.", func(s agent.Stats) int64 { return s.Runs }),
		counter("runs_failed_total", "Agent runs that ended with an error.", func(s agent.Stats) int64 { return s.RunsFailed }),
		counter("model_calls_total", "Requests sent to the model.", func(s agent.Stats) int64 { return int64(s.ModelCalls) }),
		counter("model_retries_total", "Model requests retried after a transient error.", func(s agent.Stats) int64 { return int64(s.ModelRetries) }),
		counter("tool_calls_total", "Tool calls the model asked for.", func(s agent.Stats) int64 { return int64(s.ToolCalls) }),
		counter("invented_tools_total", "Tool calls naming a tool the run did not offer.", func(s agent.Stats) int64 { return int64(s.InventedTools) }),
		counter("invalid_arguments_total", "Tool calls whose arguments were not JSON or failed the schema.", func(s agent.Stats) int64 { return int64(s.InvalidArguments) }),
		counter("tool_errors_total", "Other failed tool calls.", func(s agent.Stats) int64 { return int64(s.ToolErrors) }),
		counter("delegations_total", "Sub-tasks handed to another profile.", func(s agent.Stats) int64 { return int64(s.Delegations) }),
	}
}
