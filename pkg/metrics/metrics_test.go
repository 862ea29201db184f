package metrics

import (
	"testing"

	"github.com/skillhost/skillhost/pkg/loader"
)

// counter reads a counter of m's registry by name and label values, and
// says whether it is there at all: a counter nobody touched is absent, and
// reading it as 0 would let a test pass that checks nothing.
func counter(t *testing.T, m *Metrics, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.Metric {
			for _, lp := range s.Label {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			return s.Counter.GetValue(), true
		}
	}
	return 0, false
}

func TestRestartsCountTheTypedField(t *testing.T) {
	m := New(Sources{})
	if _, ok := counter(t, m, "skillhost_restarts_total", nil); ok {
		t.Fatal("restarts counted before any event")
	}
	events := []loader.Event{
		{Skill: "svc", Version: "1.0.0", From: loader.StateStarting, State: loader.StateActive, Reason: "new desired version"},
		{Skill: "svc", Version: "1.0.0", From: loader.StateActive, State: loader.StateCrashed, Reason: "process exited unexpectedly"},
		{Skill: "svc", Version: "1.0.0", From: loader.StateStarting, State: loader.StateActive, Reason: "restarted after a crash", Restart: true},
		// The wording alone is not a restart: only the field counts.
		{Skill: "svc", Version: "1.0.0", From: loader.StateStarting, State: loader.StateActive, Reason: "restarted after a crash"},
		{Skill: "other", Version: "2.0.0", From: loader.StateStarting, State: loader.StateActive, Reason: "back up", Restart: true},
	}
	for _, e := range events {
		m.ObserveEvent(e)
	}
	for skill, want := range map[string]float64{"svc": 1, "other": 1} {
		got, ok := counter(t, m, "skillhost_restarts_total", map[string]string{"skill": skill})
		if !ok || got != want {
			t.Errorf("skillhost_restarts_total{skill=%q} = %v (present %v), want %v", skill, got, ok, want)
		}
	}
	if got, ok := counter(t, m, "skillhost_lifecycle_events_total", map[string]string{"state": "active"}); !ok || got != 4 {
		t.Errorf("skillhost_lifecycle_events_total{state=active} = %v (present %v), want 4", got, ok)
	}
}
