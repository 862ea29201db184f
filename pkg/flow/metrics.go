package flow

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what runs do, as Prometheus counters named
// skillhost_flow_*: runs by stop reason, rounds, and tokens per
// participant. It is the engine's Observer; register Collectors with the
// host's registry.
type Metrics struct {
	stops  *prometheus.CounterVec
	rounds *prometheus.CounterVec
	tokens *prometheus.CounterVec
}

var _ Observer = (*Metrics)(nil)

// NewMetrics makes the counters.
func NewMetrics() *Metrics {
	return &Metrics{
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillhost_flow_runs_stopped_total",
			Help: "Runs that ended, by flow and stop reason."}, []string{"flow", "stop_reason"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillhost_flow_rounds_total",
			Help: "Turns given to a participant, by flow."}, []string{"flow"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillhost_flow_tokens_total",
			Help: "Model tokens used, by flow, participant (selector:<profile> for the selector) and kind (prompt, completion)."},
			[]string{"flow", "participant", "kind"}),
	}
}

// Collectors returns the counters to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.stops, m.rounds, m.tokens}
}

func (m *Metrics) Round(flow string) { m.rounds.WithLabelValues(flow).Inc() }

func (m *Metrics) Usage(flow, participant string, prompt, completion int64) {
	m.tokens.WithLabelValues(flow, participant, "prompt").Add(float64(prompt))
	m.tokens.WithLabelValues(flow, participant, "completion").Add(float64(completion))
}

func (m *Metrics) Stopped(flow, reason string) { m.stops.WithLabelValues(flow, reason).Inc() }
