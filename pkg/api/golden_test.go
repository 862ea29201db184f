package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the API answers now")

// TestWireGolden pins the JSON clients see: a field renamed in a type the
// API answers with (its own or one it converts from) shows up here as a
// diff, and `go test ./pkg/api -run TestWireGolden -update` records an
// intended change.
func TestWireGolden(t *testing.T) {
	srv := newTestServer(t, fixtureSkills())
	for _, tc := range []struct {
		golden, method, target, body string
		status                       int
	}{
		{"skills", "GET", "/v1/skills", "", http.StatusOK},
		{"skill", "GET", "/v1/skills/calc", "", http.StatusOK},
		{"skill_disabled", "GET", "/v1/skills/text", "", http.StatusOK},
		{"skill_instructions", "GET", "/v1/skills/pdf-processing", "", http.StatusOK},
		{"error_bad_skill_path", "GET", "/v1/skills/pdf-processing/files/references/..%2F..%2Fetc", "", http.StatusBadRequest},
		{"tools", "GET", "/v1/tools", "", http.StatusOK},
		{"tools_ranked", "GET", "/v1/tools?q=add+numbers&limit=1", "", http.StatusOK},
		{"tool", "GET", "/v1/tools/calc.add", "", http.StatusOK},
		{"invoke", "POST", "/v1/tools/calc.add/invoke", `{"arguments":{"a":1,"b":2}}`, http.StatusOK},
		{"error_not_found", "GET", "/v1/skills/nope", "", http.StatusNotFound},
		{"error_invalid_arguments", "POST", "/v1/tools/calc.add/invoke", `{"arguments":{"a":"one"}}`, http.StatusBadRequest},
		{"error_bad_filter", "GET", "/v1/tools?read_only=maybe&skills=No.Such", "", http.StatusBadRequest},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			w := do(t, srv, tc.method, tc.target, tc.body)
			if w.Code != tc.status {
				t.Fatalf("%s %s = %d, want %d: %s", tc.method, tc.target, w.Code, tc.status, w.Body)
			}
			got := w.Body.Bytes()
			if tc.golden == "invoke" {
				// duration_ms is the one field that differs between runs.
				var m map[string]any
				json.Unmarshal(got, &m)
				if _, ok := m["duration_ms"].(float64); !ok {
					t.Fatalf("invoke answer without duration_ms: %s", got)
				}
				m["duration_ms"] = 0
				got, _ = json.Marshal(m)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatalf("not JSON: %v: %s", err, got)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to record it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s %s answers\n%s\nwhich is not %s:\n%s", tc.method, tc.target, pretty.Bytes(), path, want)
			}
		})
	}
}
