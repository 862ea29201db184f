package agent

import "github.com/prometheus/client_golang/prometheus"

// Collectors exposes the loop's cumulative counters (Stats) as Prometheus
// counters named skillhost_agent_*, including the calls a model got wrong
// (invented tools, bad arguments), which say more about a model than its
// answers do. They read Stats at scrape time.
func (a *Agent) Collectors() []prometheus.Collector {
	counter := func(name, help string, read func(Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "skillhost_agent_" + name, Help: help},
			func() float64 { return float64(read(a.Stats())) })
	}
	return []prometheus.Collector{
		counter("runs_total", "Agent runs finished.", func(s Stats) int64 { return s.Runs }),
		counter("runs_failed_total", "Agent runs that ended with an error.", func(s Stats) int64 { return s.RunsFailed }),
		counter("model_calls_total", "Requests sent to the model.", func(s Stats) int64 { return int64(s.ModelCalls) }),
		counter("model_retries_total", "Model requests retried after a transient error.", func(s Stats) int64 { return int64(s.ModelRetries) }),
		counter("tool_calls_total", "Tool calls the model asked for.", func(s Stats) int64 { return int64(s.ToolCalls) }),
		counter("invented_tools_total", "Tool calls naming a tool the run did not offer.", func(s Stats) int64 { return int64(s.InventedTools) }),
		counter("invalid_arguments_total", "Tool calls whose arguments were not JSON or failed the schema.", func(s Stats) int64 { return int64(s.InvalidArguments) }),
		counter("tool_errors_total", "Other failed tool calls.", func(s Stats) int64 { return int64(s.ToolErrors) }),
		counter("delegations_total", "Sub-tasks handed to another profile.", func(s Stats) int64 { return int64(s.Delegations) }),
		counter("skill_activations_total", "Agent Skills a model activated.", func(s Stats) int64 { return int64(s.SkillActivations) }),
		counter("tool_searches_total", "search_tools calls.", func(s Stats) int64 { return int64(s.ToolSearches) }),
	}
}
