package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	data := mustJSON(t, baseManifest("calc", "1.2.3", script))
	m, ps := Parse(data)
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	if m.Name != "calc" || m.Version != "1.2.3" || m.Entrypoint != "run" || m.Env["LANG"] != "C" ||
		m.Limits.TimeoutMS != 1000 || len(m.Tools) != 1 || m.ManifestVersion != 1 {
		t.Fatalf("decoded wrong: %+v", m)
	}
	if ps.Err() != nil {
		t.Fatal("Err of no problems must be nil")
	}
}

// encoding/json matches keys case-insensitively; the decoded manifest must hold what the
// schema judged, not a differently-cased twin.
func TestParseCaseTwin(t *testing.T) {
	m := baseManifest("calc", "1.0.0", script)
	m["NAME"] = "evil"
	m["limits"] = map[string]any{"timeout_ms": 1000, "Timeout_MS": 5}
	got, ps := Parse(mustJSON(t, m))
	if !hasProblem(ps, "$.NAME", "unknown field") || !hasProblem(ps, "$.limits.Timeout_MS", "unknown field") {
		t.Fatalf("%v", ps)
	}
	if got.Name != "calc" || got.Limits.TimeoutMS != 1000 {
		t.Fatalf("decoded the twin: %+v", got)
	}
}

func TestMayCall(t *testing.T) {
	data := baseManifest("assist", "1.0.0", script)
	data["uses"] = []any{"calc.evaluate", "policy.*"}
	m, ps := Parse(mustJSON(t, data))
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	for _, c := range []struct {
		skill, tool string
		want        bool
	}{{"calc", "evaluate", true}, {"calc", "convert", false}, {"policy", "search", true}, {"policy", "*", true}, {"textkit", "count", false}, {"calc.evaluate", "", false}} {
		if got := m.MayCall(c.skill, c.tool); got != c.want {
			t.Errorf("MayCall(%q, %q) = %v, want %v", c.skill, c.tool, got, c.want)
		}
	}
}

func TestParseMinimal(t *testing.T) {
	m := baseManifest("calc", "1.0.0-rc.1+build.5", script)
	for _, k := range []string{"tags", "tools", "env", "limits"} {
		delete(m, k)
	}
	if _, ps := Parse(mustJSON(t, m)); len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
}

// TestParseProblems has one case per rule. Each case edits a valid manifest and names the
// problem it must produce; the problem must be the only one, so rules do not double-report.
func TestParseProblems(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		path  string
		parts []string
	}{
		{"manifest_version 2", func(m map[string]any) { m["manifest_version"] = 2 }, "$.manifest_version", []string{"must be 1, not 2"}},
		{"manifest_version string", func(m map[string]any) { m["manifest_version"] = "1" }, "$.manifest_version", []string{"must be an integer", `string "1"`}},
		{"manifest_version fraction", func(m map[string]any) { m["manifest_version"] = 1.5 }, "$.manifest_version", []string{"must be an integer", "1.5"}},
		{"missing name", func(m map[string]any) { delete(m, "name") }, "$.name", []string{"required"}},
		{"missing version", func(m map[string]any) { delete(m, "version") }, "$.version", []string{"required"}},
		{"missing description", func(m map[string]any) { delete(m, "description") }, "$.description", []string{"required"}},
		{"missing entrypoint", func(m map[string]any) { delete(m, "entrypoint") }, "$.entrypoint", []string{"required"}},
		{"missing sha256", func(m map[string]any) { delete(m, "sha256") }, "$.sha256", []string{"required"}},
		{"missing manifest_version", func(m map[string]any) { delete(m, "manifest_version") }, "$.manifest_version", []string{"required"}},
		{"uses not qualified", func(m map[string]any) { m["uses"] = []any{"calc"} }, "$.uses[0]", []string{`"calc" does not match`}},
		{"uses bad wildcard", func(m map[string]any) { m["uses"] = []any{"calc.eval*"} }, "$.uses[0]", []string{`"calc.eval*" does not match`}},
		{"uses all skills", func(m map[string]any) { m["uses"] = []any{"*.*"} }, "$.uses[0]", []string{`"*.*" does not match`}},
		{"uses twice", func(m map[string]any) { m["uses"] = []any{"calc.evaluate", "calc.evaluate"} }, "$.uses[1]", []string{"repeats $.uses[0]"}},
		{"uses covered by wildcard", func(m map[string]any) { m["uses"] = []any{"calc.*", "calc.evaluate"} }, "$.uses[1]", []string{`"calc.evaluate" is already covered by "calc.*"`}},
		{"uses name too long", func(m map[string]any) { m["uses"] = []any{"calc." + long(60)} }, "$.uses[0]", []string{"over the 64-character limit"}},
		{"uses skill too long", func(m map[string]any) { m["uses"] = []any{long(33) + ".*"} }, "$.uses[0]", []string{"longer than 32 characters"}},
		{"name uppercase", func(m map[string]any) { m["name"] = "Calc" }, "$.name", []string{`"Calc" does not match`}},
		{"name double underscore", func(m map[string]any) { m["name"] = "my__calc" }, "$.name", []string{`"my__calc"`}},
		{"name leading digit", func(m map[string]any) { m["name"] = "1calc" }, "$.name", []string{`"1calc"`}},
		{"name trailing dash", func(m map[string]any) { m["name"] = "calc-" }, "$.name", []string{`"calc-"`}},
		{"name too long", func(m map[string]any) { m["name"] = long(33) }, "$.name", []string{"33 characters", "maximum is 32"}},
		{"name empty", func(m map[string]any) { m["name"] = "" }, "$.name", []string{"must not be empty"}},
		{"name number", func(m map[string]any) { m["name"] = 7 }, "$.name", []string{"must be a string", "number 7"}},
		{"version leading v", func(m map[string]any) { m["version"] = "v1.0.0" }, "$.version", []string{`"v1.0.0" is not a strict semantic version`}},
		{"version two parts", func(m map[string]any) { m["version"] = "1.0" }, "$.version", []string{"strict semantic version"}},
		{"version leading zero", func(m map[string]any) { m["version"] = "01.0.0" }, "$.version", []string{"strict semantic version"}},
		{"version too long", func(m map[string]any) { m["version"] = "1.0.0-" + long(200) }, "$.version", []string{"maximum is 128"}},
		{"description empty", func(m map[string]any) { m["description"] = "" }, "$.description", []string{"must not be empty"}},
		{"description blank", func(m map[string]any) { m["description"] = " \t\n" }, "$.description", []string{"is blank"}},
		{"description too long", func(m map[string]any) { m["description"] = long(2001) }, "$.description", []string{"2001 characters", "maximum is 2000"}},
		{"entrypoint dotdot", func(m map[string]any) { m["entrypoint"] = "../x" }, "$.entrypoint", []string{`"../x" escapes the version folder`}},
		{"entrypoint inner dotdot", func(m map[string]any) { m["entrypoint"] = "bin/../run" }, "$.entrypoint", []string{`".."`}},
		{"entrypoint absolute", func(m map[string]any) { m["entrypoint"] = "/bin/sh" }, "$.entrypoint", []string{"absolute path"}},
		{"entrypoint backslash", func(m map[string]any) { m["entrypoint"] = `bin\run` }, "$.entrypoint", []string{`"/"`}},
		{"entrypoint trailing slash", func(m map[string]any) { m["entrypoint"] = "run/" }, "$.entrypoint", []string{"names a folder"}},
		{"entrypoint dot", func(m map[string]any) { m["entrypoint"] = "." }, "$.entrypoint", []string{"version folder itself"}},
		{"entrypoint manifest", func(m map[string]any) { m["entrypoint"] = "manifest.json" }, "$.entrypoint", []string{"is the manifest"}},
		{"entrypoint NUL", func(m map[string]any) { m["entrypoint"] = "run\x00x" }, "$.entrypoint", []string{"NUL"}},
		{"entrypoint empty", func(m map[string]any) { m["entrypoint"] = "" }, "$.entrypoint", []string{"must not be empty"}},
		{"sha256 short", func(m map[string]any) { m["sha256"] = "abc" }, "$.sha256", []string{`"abc" does not match`, "64 lowercase hex"}},
		{"sha256 uppercase", func(m map[string]any) { m["sha256"] = strings.ToUpper(sum(script)) }, "$.sha256", []string{"does not match"}},
		{"tags not array", func(m map[string]any) { m["tags"] = "math" }, "$.tags", []string{"must be an array"}},
		{"tags null", func(m map[string]any) { m["tags"] = nil }, "$.tags", []string{"must be an array, not null"}},
		{"tag number", func(m map[string]any) { m["tags"] = []any{"a", 3} }, "$.tags[1]", []string{"must be a string"}},
		{"tag duplicate", func(m map[string]any) { m["tags"] = []any{"a", "b", "a"} }, "$.tags[2]", []string{`"a" repeats $.tags[0]`}},
		{"tag padded", func(m map[string]any) { m["tags"] = []any{" a"} }, "$.tags[0]", []string{"leading or trailing spaces"}},
		{"tag empty", func(m map[string]any) { m["tags"] = []any{""} }, "$.tags[0]", []string{"must not be empty"}},
		{"too many tags", func(m map[string]any) {
			var tags []any
			for i := range 33 {
				tags = append(tags, "t"+strconv.Itoa(i))
			}
			m["tags"] = tags
		}, "$.tags", []string{"has 33 items", "maximum is 32"}},
		{"tool bad name", func(m map[string]any) { m["tools"] = []any{"add", "Sub"} }, "$.tools[1]", []string{`"Sub" does not match`}},
		{"tool duplicate", func(m map[string]any) { m["tools"] = []any{"add", "add"} }, "$.tools[1]", []string{"repeats"}},
		{"tool name too long for OpenAI", func(m map[string]any) { m["tools"] = []any{long(60)} }, "$.tools[0]", []string{"calc__", "64-character"}},
		{"author number", func(m map[string]any) { m["author"] = 1 }, "$.author", []string{"must be a string"}},
		{"author too long", func(m map[string]any) { m["author"] = long(201) }, "$.author", []string{"maximum is 200"}},
		{"env lowercase key", func(m map[string]any) { m["env"] = map[string]any{"path": "/bin"} }, "$.env.path", []string{`key "path" does not match`}},
		{"env key with space", func(m map[string]any) { m["env"] = map[string]any{"A B": "x"} }, `$.env["A B"]`, []string{`key "A B"`}},
		{"env key leading digit", func(m map[string]any) { m["env"] = map[string]any{"1A": "x"} }, `$.env["1A"]`, []string{`key "1A"`}},
		{"env value number", func(m map[string]any) { m["env"] = map[string]any{"A": 1} }, "$.env.A", []string{"must be a string"}},
		{"env value NUL", func(m map[string]any) { m["env"] = map[string]any{"A": "x\x00y"} }, "$.env.A", []string{"NUL"}},
		{"env not object", func(m map[string]any) { m["env"] = []any{"A=1"} }, "$.env", []string{"must be an object"}},
		{"limits not object", func(m map[string]any) { m["limits"] = 5 }, "$.limits", []string{"must be an object"}},
		{"timeout zero", func(m map[string]any) { m["limits"] = map[string]any{"timeout_ms": 0} }, "$.limits.timeout_ms", []string{"0 is under the minimum 1", "default"}},
		{"timeout negative", func(m map[string]any) { m["limits"] = map[string]any{"timeout_ms": -5} }, "$.limits.timeout_ms", []string{"-5"}},
		{"timeout over max", func(m map[string]any) { m["limits"] = map[string]any{"timeout_ms": 600001} }, "$.limits.timeout_ms", []string{"600001 is over the maximum 600000"}},
		{"timeout string", func(m map[string]any) { m["limits"] = map[string]any{"timeout_ms": "30s"} }, "$.limits.timeout_ms", []string{"must be an integer", `"30s"`}},
		{"timeout huge", func(m map[string]any) { m["limits"] = map[string]any{"timeout_ms": json.Number("1e400")} }, "$.limits.timeout_ms", []string{"over the maximum"}},
		{"concurrency over max", func(m map[string]any) { m["limits"] = map[string]any{"max_concurrency": 4097} }, "$.limits.max_concurrency", []string{"over the maximum 4096"}},
		{"request bytes over max", func(m map[string]any) { m["limits"] = map[string]any{"max_request_bytes": 64<<20 + 1} }, "$.limits.max_request_bytes", []string{"over the maximum"}},
		{"response bytes over max", func(m map[string]any) { m["limits"] = map[string]any{"max_response_bytes": 64<<20 + 1} }, "$.limits.max_response_bytes", []string{"over the maximum"}},
		{"unknown field", func(m map[string]any) { m["extra"] = true }, "$.extra", []string{"unknown field"}},
		{"unknown field typo", func(m map[string]any) { m["descripton"] = "x" }, "$.descripton", []string{"unknown field", `did you mean "description"`}},
		{"unknown limits field", func(m map[string]any) { m["limits"] = map[string]any{"timeout": 5} }, "$.limits.timeout", []string{"unknown field", `"timeout_ms"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseManifest("calc", "1.0.0", script)
			c.edit(m)
			_, ps := Parse(mustJSON(t, m))
			if !hasProblem(ps, c.path, c.parts...) {
				t.Fatalf("want a problem at %s containing %q; got %v", c.path, c.parts, ps)
			}
			if len(ps) != 1 {
				t.Errorf("want exactly one problem, got %d: %v", len(ps), ps)
			}
		})
	}
}

func TestParseReportsEverythingAtOnce(t *testing.T) {
	m := baseManifest("calc", "1.0.0", script)
	m["name"] = "Calc"
	m["version"] = "v1"
	m["limits"] = map[string]any{"timeout_ms": 0, "max_concurrency": 1 << 20}
	m["bogus"] = 1
	delete(m, "sha256")
	got, ps := Parse(mustJSON(t, m))
	for _, p := range []string{"$.name", "$.version", "$.limits.timeout_ms", "$.limits.max_concurrency", "$.bogus", "$.sha256"} {
		if !hasProblem(ps, p) {
			t.Errorf("no problem at %s in %v", p, ps)
		}
	}
	if got == nil || got.Description != "Adds numbers." {
		t.Errorf("want a best-effort manifest, got %+v", got)
	}
	if ps.Err() == nil || !strings.Contains(ps.Error(), "$.bogus: unknown field; ") && !strings.HasSuffix(ps.Error(), "$.bogus: unknown field") {
		t.Errorf("Error() = %q", ps.Error())
	}
}

func TestParseDocumentProblems(t *testing.T) {
	valid := mustJSON(t, baseManifest("calc", "1.0.0", script))
	cases := []struct {
		name      string
		data      []byte
		path      string
		parts     []string
		truncated bool
	}{
		{"empty", nil, "$", []string{"empty"}, true},
		{"whitespace", []byte(" \n"), "$", []string{"empty"}, true},
		{"truncated", valid[:len(valid)/2], "$", []string{"ends early", "incomplete"}, true},
		{"syntax error", []byte("{\n  \"name\": \"calc\",\n  oops\n}"), "$", []string{"line 3, column 3", "invalid character"}, false},
		{"trailing comma", []byte(`{"name":"calc",}`), "$", []string{"invalid JSON"}, false},
		{"two documents", append(append([]byte{}, valid...), valid...), "$", []string{"data after the end"}, false},
		{"trailing garbage", append(append([]byte{}, valid...), 'x'), "$", []string{"data after the end"}, false},
		{"array", []byte(`[1,2]`), "$", []string{"must be a JSON object, not an array"}, false},
		{"string", []byte(`"calc"`), "$", []string{"must be a JSON object"}, false},
		{"null", []byte(`null`), "$", []string{"must be a JSON object, not null"}, false},
		{"over size cap", append(valid[:len(valid)-1], []byte(`,"author":"`+strings.Repeat("a", MaxManifestBytes)+`"}`)...), "$", []string{"over the 65536-byte limit"}, false},
		{"deeply nested", []byte(`{"tags":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}`), "$", []string{"nested more than 32 levels"}, false},
		{"deeply nested unclosed", []byte(strings.Repeat(`{"a":`, 10000)), "$", []string{"nested more than 32"}, false},
		{"duplicate key", []byte(`{"name":"calc","name":"evil"}`), "$.name", []string{"duplicate key"}, false},
		{"nested duplicate key", []byte(`{"limits":{"timeout_ms":1,"timeout_ms":2}}`), "$.limits.timeout_ms", []string{"duplicate key"}, false},
		{"duplicate key in array", []byte(`{"x":[1,{"a":1,"a":2}]}`), "$.x[1].a", []string{"duplicate key"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, ps, truncated := parse(c.data)
			if m != nil {
				t.Errorf("want no manifest, got %+v", m)
			}
			if !hasProblem(ps, c.path, c.parts...) || len(ps) != 1 {
				t.Fatalf("want one problem at %s containing %q; got %v", c.path, c.parts, ps)
			}
			if truncated != c.truncated {
				t.Errorf("truncated = %v, want %v", truncated, c.truncated)
			}
		})
	}
}

func TestParseNestingJustUnderCap(t *testing.T) {
	// 31 levels inside the top object is allowed by the scan; the schema then objects to the
	// value, which shows the cap does not refuse legitimate depth.
	data := []byte(`{"tags":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`)
	_, ps := Parse(data)
	if hasProblem(ps, "$", "nested") {
		t.Fatalf("depth %d refused: %v", maxDepth, ps)
	}
}

func TestLimitsDefaults(t *testing.T) {
	d := Limits{}.WithDefaults()
	if d != (Limits{TimeoutMS: 30000, MaxConcurrency: 64, MaxRequestBytes: 1 << 20, MaxResponseBytes: 4 << 20}) {
		t.Fatalf("defaults: %+v", d)
	}
	if got := (Limits{MaxConcurrency: 3}).WithDefaults(); got.MaxConcurrency != 3 || got.TimeoutMS != 30000 {
		t.Fatalf("set field overwritten: %+v", got)
	}
	if (Limits{}).Timeout() != 30*time.Second || (Limits{TimeoutMS: 1500}).Timeout() != 1500*time.Millisecond {
		t.Fatal("Timeout")
	}
}

// TestSchemaMatchesConstants keeps the Go constants and the schema's maxima in step.
func TestSchemaMatchesConstants(t *testing.T) {
	var s struct {
		Properties struct {
			Limits struct {
				Properties map[string]struct{ Maximum int64 } `json:"properties"`
			} `json:"limits"`
			Name struct{ MaxLength int } `json:"name"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	lp := s.Properties.Limits.Properties
	want := map[string]int64{"timeout_ms": MaxTimeoutMS, "max_concurrency": MaxMaxConcurrency, "max_request_bytes": MaxMessageBytes, "max_response_bytes": MaxMessageBytes}
	for k, v := range want {
		if lp[k].Maximum != v {
			t.Errorf("schema %s maximum %d, Go constant %d", k, lp[k].Maximum, v)
		}
	}
	if s.Properties.Name.MaxLength != maxSkillNameLen {
		t.Errorf("schema name maxLength %d, Go %d", s.Properties.Name.MaxLength, maxSkillNameLen)
	}
}

// TestSchemaFileIsTheEmbeddedOne guards against editing a copy: the schema on disk is what
// docs link to, and it must be what the binary enforces.
func TestSchemaFileIsTheEmbeddedOne(t *testing.T) {
	b, err := os.ReadFile("manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, schemaJSON) {
		t.Fatal("embedded schema differs from manifest.schema.json")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mustJSON(f, baseManifest("calc", "1.0.0", script)))
	f.Add([]byte(`{"name":"calc","name":"x"}`))
	f.Add([]byte(`{"env":{"a b":1},"limits":{"timeout_ms":1e400},"tags":[1,1]}`))
	f.Add([]byte(`{"a":[[[[[[[[`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte("{\"entrypoint\":\"../\\u0000\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ps := Parse(data)
		for _, p := range ps {
			if p.Path == "" || p.Message == "" {
				t.Fatalf("problem without path or message: %#v (all: %v)", p, ps)
			}
			if !strings.HasPrefix(p.Path, "$") {
				t.Fatalf("Parse problem path %q is not a JSON path", p.Path)
			}
		}
		if len(ps) == 0 && m == nil {
			t.Fatal("no problems but no manifest")
		}
		if len(ps) == 0 {
			// A clean manifest must round-trip to one that is still clean.
			if _, ps2 := Parse(mustJSON(t, m)); len(ps2) != 0 {
				t.Fatalf("re-encoded manifest has problems: %v", ps2)
			}
		}
	})
}
