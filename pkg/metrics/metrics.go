package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Metrics holds the collectors of one daemon.
type Metrics struct {
	reg *prometheus.Registry
	src *Sources

	invalidMu sync.Mutex          // guards invalid
	invalid   map[string]struct{} // folders invalid at the last scan, so each counts once

	calls      *prometheus.CounterVec
	total      atomic.Uint64 // every call observed, for Calls
	latency    *prometheus.HistogramVec
	restarts   *prometheus.CounterVec
	swaps      prometheus.Counter
	swapTime   prometheus.Histogram
	scanErrors prometheus.Counter
	lifecycle  *prometheus.CounterVec
	nested     *prometheus.CounterVec
}

// SetRegistry sets the registry read at scrape time (the registry is built
// after the metrics, since its hooks feed them).
func (m *Metrics) SetRegistry(r *registry.Registry) { m.src.Registry = r }

// SetStatus sets the skills' status read at scrape time (the loader is built
// after the metrics, since its hooks feed them). Call it before anything
// scrapes.
func (m *Metrics) SetStatus(status func() []loader.SkillStatus) { m.src.Status = status }

// Sources are read at scrape time.
type Sources struct {
	Registry *registry.Registry
	Status   func() []loader.SkillStatus
}

// New registers every collector on a fresh Prometheus registry.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), src: &src}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skillhost_calls_total", Help: "Tool calls by tool and outcome (ok or the error code).",
	}, []string{"tool", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "skillhost_call_duration_seconds", Help: "Tool call latency, from the registry's point of view.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"tool"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skillhost_restarts_total", Help: "Skill restarts after a crash.",
	}, []string{"skill"})
	m.swaps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "skillhost_swaps_total", Help: "Registry swaps that put a new instance in service.",
	})
	m.swapTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "skillhost_swap_duration_seconds", Help: "Time to publish a new instance's tools into the registry.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
	})
	m.scanErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "skillhost_scan_errors_total", Help: "Tree scans that failed, plus version folders each time they became invalid.",
	})
	m.lifecycle = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skillhost_lifecycle_events_total", Help: "Lifecycle transitions by the state entered.",
	}, []string{"state"})
	m.nested = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skillhost_nested_calls_total", Help: "Calls made by tools through the host (sdk.Call), by calling tool, called tool and outcome; they are in skillhost_calls_total too.",
	}, []string{"caller", "tool", "outcome"})
	states := prometheus.NewDesc("skillhost_instances", "Skill versions by state.", []string{"state"}, nil)
	inflight := prometheus.NewDesc("skillhost_in_flight_calls", "Calls in flight per skill.", []string{"skill"}, nil)
	size := prometheus.NewDesc("skillhost_registry_tools", "Tools in the registry.", nil, nil)
	m.reg.MustRegister(m.calls, m.latency, m.restarts, m.swaps, m.swapTime, m.scanErrors, m.lifecycle, m.nested,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectorFunc{descs: []*prometheus.Desc{states, inflight, size}, collect: func(ch chan<- prometheus.Metric) {
			count := map[loader.State]float64{}
			for _, s := range []loader.State{loader.StateStarting, loader.StateActive, loader.StateDraining, loader.StateFailed,
				loader.StateInvalid, loader.StateIncomplete, loader.StateStopped, loader.StateCrashed} {
				count[s] = 0
			}
			if m.src.Status != nil {
				for _, sk := range m.src.Status() {
					var n float64
					for _, v := range sk.Versions {
						count[v.State]++
						n += float64(v.InFlight)
					}
					ch <- prometheus.MustNewConstMetric(inflight, prometheus.GaugeValue, n, sk.Name)
				}
			}
			for s, n := range count {
				ch <- prometheus.MustNewConstMetric(states, prometheus.GaugeValue, n, string(s))
			}
			if r := m.src.Registry; r != nil {
				ch <- prometheus.MustNewConstMetric(size, prometheus.GaugeValue, float64(r.Snapshot().Len()))
			}
		}})
	return m
}

type collectorFunc struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// Register adds a face's own collectors (the agent loop's counters, say).
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveCall is the registry's OnCall hook. Names of tools that do not
// exist are folded into one label value, so a caller cannot grow the
// metric's cardinality at will.
func (m *Metrics) ObserveCall(tool string, code registry.Code, d time.Duration) {
	outcome := "ok"
	if code != "" {
		outcome = string(code)
	}
	if code == registry.CodeUnknownTool || code == registry.CodeBadRequest {
		tool = "(unknown)"
	}
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.total.Add(1)
	if code == "" || code == registry.CodeToolError {
		m.latency.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// ObserveNested is the registry's OnNested hook. Call ids are not labels
// (one series per call); the caller's tool ties a nested call to its
// parent's series, and logs and events carry the ids. Unknown names are
// folded as in ObserveCall.
func (m *Metrics) ObserveNested(n registry.NestedCall) {
	outcome, tool := "ok", n.Tool
	if n.Code != "" {
		outcome = string(n.Code)
	}
	if n.Code == registry.CodeUnknownTool || n.Code == registry.CodeBadRequest {
		tool = "(unknown)"
	} else if skill, t, err := registry.SplitName(tool); err == nil {
		tool = registry.Qualified(skill, t)
	}
	m.nested.WithLabelValues(n.Caller, tool, outcome).Inc()
}

// Calls is the number of calls observed so far, whatever their outcome.
func (m *Metrics) Calls() uint64 { return m.total.Load() }

// ObserveEvent is fed every lifecycle event. A restart is counted from the
// event's Restart field, never from its Reason, which is worded for people.
func (m *Metrics) ObserveEvent(e loader.Event) {
	m.lifecycle.WithLabelValues(string(e.State)).Inc()
	if e.State == loader.StateActive && e.Restart {
		m.restarts.WithLabelValues(e.Skill).Inc()
	}
}

// ObserveSwap is the loader's OnSwap hook.
func (m *Metrics) ObserveSwap(d time.Duration) {
	m.swaps.Inc()
	m.swapTime.Observe(d.Seconds())
}

// ObserveScan is the loader's OnScan hook. A scan that fails counts once;
// so does a version folder when it becomes invalid (not at every rescan
// while it stays so).
func (m *Metrics) ObserveScan(t *manifest.Tree, err error) {
	if err != nil {
		m.scanErrors.Inc()
		return
	}
	m.invalidMu.Lock()
	defer m.invalidMu.Unlock()
	now := map[string]struct{}{}
	for _, v := range t.Versions {
		if v.Status != manifest.StatusInvalid {
			continue
		}
		key := v.Dir + "\x00" + v.Fingerprint
		now[key] = struct{}{}
		if _, seen := m.invalid[key]; !seen {
			m.scanErrors.Inc()
		}
	}
	m.invalid = now
}
