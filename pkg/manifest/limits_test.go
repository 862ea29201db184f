package manifest

import (
	"encoding/json"
	"testing"
)

// The process limits (memory_mb, max_open_files, cpu_seconds) are optional, have no
// default, and are bounded by the schema.

func TestProcessLimitsParse(t *testing.T) {
	m := baseManifest("calc", "1.0.0", script)
	m["limits"] = map[string]any{"memory_mb": 256, "max_open_files": 64, "cpu_seconds": 30, "timeout_ms": 1000}
	got, ps := Parse(mustJSON(t, m))
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	if got.Limits.MemoryMB != 256 || got.Limits.MaxOpenFiles != 64 || got.Limits.CPUSeconds != 30 {
		t.Fatalf("decoded %+v", got.Limits)
	}
	// No default: WithDefaults leaves them unset, meaning "no limit".
	d := Limits{}.WithDefaults()
	if d.MemoryMB != 0 || d.MaxOpenFiles != 0 || d.CPUSeconds != 0 {
		t.Fatalf("process limits got defaults: %+v", d)
	}
	if w := got.Limits.WithDefaults(); w.MemoryMB != 256 || w.MaxOpenFiles != 64 || w.CPUSeconds != 30 {
		t.Fatalf("WithDefaults changed set limits: %+v", w)
	}
}

func TestProcessLimitsProblems(t *testing.T) {
	cases := []struct {
		name  string
		lim   map[string]any
		path  string
		parts []string
	}{
		{"memory under minimum", map[string]any{"memory_mb": 8}, "$.limits.memory_mb", []string{"8 is under the minimum 32"}},
		{"memory zero", map[string]any{"memory_mb": 0}, "$.limits.memory_mb", []string{"under the minimum"}},
		{"memory over maximum", map[string]any{"memory_mb": MaxMemoryMB + 1}, "$.limits.memory_mb", []string{"over the maximum 1048576"}},
		{"memory string", map[string]any{"memory_mb": "256M"}, "$.limits.memory_mb", []string{"must be an integer", `"256M"`}},
		{"memory fraction", map[string]any{"memory_mb": 1.5}, "$.limits.memory_mb", []string{"must be an integer"}},
		{"files under minimum", map[string]any{"max_open_files": 3}, "$.limits.max_open_files", []string{"3 is under the minimum 16"}},
		{"files over maximum", map[string]any{"max_open_files": MaxOpenFiles + 1}, "$.limits.max_open_files", []string{"over the maximum"}},
		{"files negative", map[string]any{"max_open_files": -1}, "$.limits.max_open_files", []string{"under the minimum"}},
		{"cpu zero", map[string]any{"cpu_seconds": 0}, "$.limits.cpu_seconds", []string{"under the minimum 1"}},
		{"cpu over maximum", map[string]any{"cpu_seconds": MaxCPUSeconds + 1}, "$.limits.cpu_seconds", []string{"over the maximum"}},
		{"cpu huge", map[string]any{"cpu_seconds": json.Number("1e400")}, "$.limits.cpu_seconds", []string{"over the maximum"}},
		{"cpu null", map[string]any{"cpu_seconds": nil}, "$.limits.cpu_seconds", []string{"must be an integer, not null"}},
		{"typo", map[string]any{"memory": 256}, "$.limits.memory", []string{"unknown field", `did you mean "memory_mb"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseManifest("calc", "1.0.0", script)
			m["limits"] = c.lim
			_, ps := Parse(mustJSON(t, m))
			if !hasProblem(ps, c.path, c.parts...) || len(ps) != 1 {
				t.Fatalf("want one problem at %s containing %q; got %v", c.path, c.parts, ps)
			}
		})
	}
}

// TestProcessLimitsSchemaMatchesConstants keeps the Go bounds and the schema in step.
func TestProcessLimitsSchemaMatchesConstants(t *testing.T) {
	var s struct {
		Properties struct {
			Limits struct {
				Properties map[string]struct{ Minimum, Maximum int64 } `json:"properties"`
			} `json:"limits"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	lp := s.Properties.Limits.Properties
	want := map[string][2]int64{
		"memory_mb":      {MinMemoryMB, MaxMemoryMB},
		"max_open_files": {MinOpenFiles, MaxOpenFiles},
		"cpu_seconds":    {1, MaxCPUSeconds},
	}
	for k, v := range want {
		if got := lp[k]; got.Minimum != v[0] || got.Maximum != v[1] {
			t.Errorf("schema %s bounds [%d, %d], Go constants [%d, %d]", k, got.Minimum, got.Maximum, v[0], v[1])
		}
	}
}
