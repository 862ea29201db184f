package main

import (
	"flag"
	"os"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/host"
)

// agentFlags adds the agent loop's flags to fs and returns what turns them
// into its config, reading the key and profile files. The route is always
// mounted: without a model it explains what to configure instead of
// answering 404.
func agentFlags(fs *flag.FlagSet) func() (*host.AgentConfig, error) {
	var baseURL, model, keyFile, agents string
	fs.StringVar(&baseURL, "llm-base-url", envOr("SKILLHOST_LLM_BASE_URL", agent.DefaultBaseURL),
		"OpenAI-compatible API root of the model behind POST /v1/chat, e.g. http://127.0.0.1:11434/v1 for Ollama (env SKILLHOST_LLM_BASE_URL)")
	fs.StringVar(&model, "llm-model", os.Getenv("SKILLHOST_LLM_MODEL"),
		"model of the agent loop, e.g. qwen2.5; without it (or a model in the profile) POST /v1/chat answers 503 agent_unconfigured (env SKILLHOST_LLM_MODEL)")
	fs.StringVar(&keyFile, "llm-key-file", os.Getenv("SKILLHOST_LLM_KEY_FILE"),
		"file holding the model's API key, mode 600 (default: env OPENAI_API_KEY; a local endpoint may need none)")
	fs.StringVar(&agents, "agents", os.Getenv("SKILLHOST_AGENTS"),
		"agent profiles, a JSON or YAML file (see examples/agents.json); default: one read-only profile over every tool (env SKILLHOST_AGENTS)")
	return func() (*host.AgentConfig, error) {
		cfg := &host.AgentConfig{BaseURL: baseURL, Model: model, APIKey: os.Getenv("OPENAI_API_KEY")}
		if keyFile != "" {
			k, err := agent.ReadKeyFile(keyFile)
			if err != nil {
				return nil, err
			}
			cfg.APIKey = k
		}
		if agents != "" {
			ps, err := agent.LoadProfiles(agents)
			if err != nil {
				return nil, err
			}
			cfg.Profiles = ps
		}
		return cfg, nil
	}
}
