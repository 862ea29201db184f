package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skillhost/skillhost/internal/testenv"
)

func TestAPIEndToEnd(t *testing.T) {
	d := startDaemon(t, exampleTree(t))
	code, body := d.Do(t, "GET", "/healthz", nil)
	if code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}

	var skills struct {
		Skills []struct {
			Name     string `json:"name"`
			Active   string `json:"active"`
			Versions []struct {
				State string   `json:"state"`
				PID   int      `json:"pid"`
				Tools []string `json:"tools"`
			} `json:"versions"`
		} `json:"skills"`
	}
	_, body = d.Do(t, "GET", "/v1/skills", nil)
	json.Unmarshal(body, &skills)
	if len(skills.Skills) != 5 {
		t.Fatalf("skills = %s", body)
	}
	for _, s := range skills.Skills {
		if s.Active != "1.0.0" || s.Versions[0].State != "active" || s.Versions[0].PID == 0 || len(s.Versions[0].Tools) == 0 {
			t.Errorf("skill %s not serving: %+v", s.Name, s)
		}
	}
	code, body = d.Do(t, "GET", "/v1/skills/policy", nil)
	if code != 200 || !strings.Contains(string(body), `"policy.search_policies"`) {
		t.Errorf("skill policy: %d %s", code, body)
	}
	code, body = d.Do(t, "GET", "/v1/skills/nope", nil)
	wantError(t, "unknown skill", code, body, 404, "not_found")

	// Tools: the whole list, one tool, and a ranked pick.
	var tools struct {
		Tools []struct {
			Name, LLMName string
			InputSchema   json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	_, body = d.Do(t, "GET", "/v1/tools", nil)
	json.Unmarshal(body, &tools)
	if len(tools.Tools) != 10 {
		t.Fatalf("tools = %s", body)
	}
	_, body = d.Do(t, "GET", "/v1/tools?read_only=true", nil)
	if n := strings.Count(string(body), `"llm_name"`); n != 10 {
		t.Errorf("a filter with no text must list every match, got %d tools", n)
	}
	for _, name := range []string{"calc.evaluate", "calc__evaluate"} {
		code, body = d.Do(t, "GET", "/v1/tools/"+name, nil)
		if code != 200 || !strings.Contains(string(body), `"input_schema"`) {
			t.Errorf("tool %s: %d %s", name, code, body)
		}
	}

	// A valid call returns the skill's real answer.
	code, body = d.Do(t, "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"(2+3)*4"}}`)
	var res struct {
		Result struct {
			Result float64 `json:"result"`
		} `json:"result"`
		Skill, Version, Tool string
		DurationMS           float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(body, &res); err != nil || code != 200 || res.Result.Result != 20 || res.Skill != "calc" || res.Version != "1.0.0" {
		t.Fatalf("invoke = %d %s", code, body)
	}
	code, body = d.Do(t, "POST", "/v1/tools/textkit__count/invoke", `{"arguments":{"text":"汉字 and words"}}`)
	if code != 200 || !strings.Contains(string(body), `"words":4`) {
		t.Errorf("textkit count = %d %s", code, body)
	}
	// A skill that calls other hosted tools (policy, then calc) through
	// the host, as its uses allow, and shows them in /v1/skills.
	code, body = d.Do(t, "POST", "/v1/tools/policyassist.lodging_allowance/invoke", `{"arguments":{"city":"上海","nights":3,"grade":"director"}}`)
	if code != 200 || !strings.Contains(string(body), `"amount":2340`) || !strings.Contains(string(body), `《差旅报销制度》第五条`) {
		t.Errorf("policyassist = %d %s", code, body)
	}
	if _, body = d.Do(t, "GET", "/v1/skills/policyassist", nil); !strings.Contains(string(body), `"uses":["calc.evaluate","policy.search_policies"]`) {
		t.Errorf("policyassist's uses are not in /v1/skills: %s", body)
	}
	// A skill's own refusal.
	code, body = d.Do(t, "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"1/0"}}`)
	wantError(t, "division by zero", code, body, 422, "tool_error")

	// Bad input, each with its code.
	cases := []struct {
		what, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown tool", "POST", "/v1/tools/calc.nope/invoke", `{"arguments":{}}`, 404, "unknown_tool"},
		{"path trick", "POST", "/v1/tools/..%2F..%2Fetc%2Fpasswd/invoke", `{"arguments":{}}`, 404, "unknown_tool"},
		{"schema", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expr":"1"}}`, 400, "invalid_arguments"},
		{"malformed", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"1"},"extra":1}`, 400, "bad_request"},
		{"two values", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"1"}} {}`, 400, "bad_request"},
		{"too large", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"` + strings.Repeat("1", 2<<20) + `"}}`, 413, "request_too_large"},
		{"deep", "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`, 400, "invalid_arguments"},
		{"bad limit", "GET", "/v1/tools?q=x&limit=0", "", 400, "bad_request"},
		{"no route", "GET", "/v2/nothing", "", 404, "not_found"},
		{"wrong method", "GET", "/v1/tools/calc.evaluate/invoke", "", 405, "method_not_allowed"},
		{"unknown parameter", "GET", "/v1/tools?tag=math", "", 400, "bad_request"},
	}
	for _, c := range cases {
		var b any
		if c.body != "" {
			b = c.body
		}
		code, body := d.Do(t, c.method, c.path, b)
		wantError(t, c.what, code, body, c.status, c.code)
	}
	req, _ := http.NewRequest("POST", d.URL+"/v1/tools/calc.evaluate/invoke", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("wrong content type: %d", resp.StatusCode)
	}
}

func TestPrefilterOverHTTP(t *testing.T) {
	d := startDaemon(t, exampleTree(t))
	first := func(q string) string {
		code, body := d.Do(t, "GET", "/v1/tools?limit=3&q="+url.QueryEscape(q), nil)
		var out struct {
			Tools []struct {
				Name  string  `json:"name"`
				Score float64 `json:"score"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &out)
		if code != 200 || len(out.Tools) == 0 {
			t.Fatalf("search %q: %d %s", q, code, body)
		}
		return out.Tools[0].Name
	}
	if got := first("查询报销制度"); !strings.HasPrefix(got, "policy.") {
		t.Errorf("Chinese policy question ranked %s first", got)
	}
	if got := first("what is 17 times 23 plus 4"); !strings.HasPrefix(got, "calc.") {
		t.Errorf("arithmetic question ranked %s first", got)
	}
	if got := first("convert 5 miles to kilometers"); got != "calc.convert_units" {
		t.Errorf("unit question ranked %s first", got)
	}
	_, body := d.Do(t, "GET", "/v1/openai/tools?q=reimbursement+policy&limit=2", nil)
	var oa struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &oa)
	if len(oa.Tools) == 0 || len(oa.Tools) > 2 || oa.Tools[0].Type != "function" || !strings.Contains(oa.Tools[0].Function.Name, "__") ||
		!strings.Contains(string(oa.Tools[0].Function.Parameters), `"type":"object"`) {
		t.Errorf("openai tools = %s", body)
	}
}

func TestAuth(t *testing.T) {
	tree := exampleTree(t)
	// A non-loopback address without a token refuses to start.
	out, err := exec.Command(hostBin, "serve", "--skills", tree, "--listen", "0.0.0.0:0", "--state-dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "without a token") {
		t.Fatalf("non-loopback without token: err=%v\n%s", err, out)
	}
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("s3cret-token-for-tests-0123456789\n"), 0o600)
	d := startDaemonNoWait(t, tree, "--token-file", tokFile)
	code, _ := d.Do(t, "GET", "/healthz", nil)
	if code != 200 {
		t.Fatalf("healthz needs no token, got %d", code)
	}
	for _, p := range []string{"/readyz", "/v1/skills", "/v1/tools", "/metrics", "/v1/events"} {
		code, body := d.Do(t, "GET", p, nil)
		wantError(t, "no token "+p, code, body, 401, "unauthorized")
	}
	d.Token = "wrong-token-wrong-token-wrong"
	code, body := d.Do(t, "GET", "/v1/skills", nil)
	wantError(t, "wrong token", code, body, 401, "unauthorized")
	d.Token = "s3cret-token-for-tests-0123456789"
	waitReady(t, d)
	if code, body := d.Do(t, "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":{"expression":"1+1"}}`); code != 200 {
		t.Fatalf("with token: %d %s", code, body)
	}
	// The CLI sends the token from --token-file or SKILLHOST_TOKEN_FILE;
	// without one it exits 1 with the daemon's unauthorized.
	cli := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(hostBin, append(args, "--addr", d.URL)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	if out, code := cli(nil, "tools", "--tag", "math"); code != 1 || !strings.Contains(out, "unauthorized") {
		t.Fatalf("CLI without a token: exit %d\n%s", code, out)
	}
	// The event stream words a refusal like every other command: the API's
	// code and message, not the raw error body.
	if out, code := cli(nil, "events"); code != 1 || !strings.HasPrefix(out, "host events: unauthorized: ") || strings.Contains(out, `{"error"`) {
		t.Fatalf("CLI events without a token: exit %d\n%s", code, out)
	}
	// Under --json a refused call prints the daemon's error body as sent.
	if out, code := cli(nil, "call", "calc.evaluate", `{"expression":"2+2"}`, "--json"); code != 1 || !strings.HasPrefix(out, `{"error":{"code":"unauthorized"`) {
		t.Fatalf("CLI call --json without a token: exit %d\n%s", code, out)
	}
	if out, code := cli(nil, "call", "calc.evaluate", `{"expression":"2+2"}`, "--token-file", tokFile); code != 0 || !strings.Contains(out, "4") {
		t.Fatalf("CLI call with --token-file: exit %d\n%s", code, out)
	}
	listOut, code := cli([]string{"SKILLHOST_TOKEN_FILE=" + tokFile}, "tools", "--tag", "math", "--json")
	var listed struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if code != 0 || json.Unmarshal([]byte(listOut), &listed) != nil || len(listed.Tools) == 0 {
		t.Fatalf("CLI tools --tag math --json with SKILLHOST_TOKEN_FILE: exit %d\n%s", code, listOut)
	}
	for _, tl := range listed.Tools {
		if !strings.HasPrefix(tl.Name, "calc.") {
			t.Errorf("tools --tag math listed %s", tl.Name)
		}
	}
	// A token file others can read is refused.
	os.Chmod(tokFile, 0o644)
	out, err = exec.Command(hostBin, "serve", "--skills", tree, "--token-file", tokFile, "--state-dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "readable by others") {
		t.Fatalf("world-readable token file: err=%v\n%s", err, out)
	}
}

func startDaemonNoWait(t *testing.T, skills string, args ...string) *testenv.Daemon {
	t.Helper()
	full := append([]string{"--skills", skills, "--state-dir", filepath.Join(t.TempDir(), "state"), "--grace", "2s"}, args...)
	return testenv.StartDaemon(t, hostBin, nil, full...)
}

func TestControlsPersistAcrossRestart(t *testing.T) {
	tree := t.TempDir()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: v, Binary: skillBin}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Install(tree, testenv.Version{Skill: "other", Version: "1.0.0", Binary: skillBin})
	state := t.TempDir()
	args := []string{"--skills", tree, "--state-dir", state, "--grace", "1s"}
	d := testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d)
	echoVersion := func(d *testenv.Daemon, tool string) (int, string) {
		code, body := d.Do(t, "POST", "/v1/tools/"+tool+"/invoke", `{"arguments":{}}`)
		var r struct {
			Result struct{ Version string } `json:"result"`
		}
		json.Unmarshal(body, &r)
		return code, r.Result.Version
	}
	if _, v := echoVersion(d, "svc.echo"); v != "2.0.0" {
		t.Fatalf("newest not serving: %s", v)
	}
	code, body := d.Do(t, "PUT", "/v1/skills/svc/pin", `{"version":"1.0.0"}`)
	if code != 200 || !strings.Contains(string(body), `"pinned":"1.0.0"`) {
		t.Fatalf("pin: %d %s", code, body)
	}
	if _, v := echoVersion(d, "svc.echo"); v != "1.0.0" {
		t.Fatalf("pinned version not serving: %s", v)
	}
	code, body = d.Do(t, "PUT", "/v1/skills/svc/pin", `{"version":"9.9.9"}`)
	wantError(t, "pin missing version", code, body, 404, "not_found")
	code, body = d.Do(t, "PUT", "/v1/skills/svc/pin", `{"v":"1"}`)
	wantError(t, "pin unknown field", code, body, 400, "bad_request")
	if code, body := d.Do(t, "POST", "/v1/skills/other/disable", nil); code != 200 || !strings.Contains(string(body), `"disabled":true`) {
		t.Fatalf("disable: %d %s", code, body)
	}
	code, body = d.Do(t, "POST", "/v1/tools/other.echo/invoke", `{"arguments":{}}`)
	wantError(t, "disabled skill", code, body, 404, "unknown_tool")
	if !strings.Contains(string(body), "disabled by an operator") {
		t.Errorf("disabled call does not say why: %s", body)
	}
	_, body = d.Do(t, "GET", "/v1/tools", nil)
	if strings.Contains(string(body), "other.") {
		t.Errorf("disabled skill's tools still listed")
	}
	if err := d.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// Restart: the decisions are back.
	d2 := testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d2)
	if _, v := echoVersion(d2, "svc.echo"); v != "1.0.0" {
		t.Fatalf("pin lost across restart: %s", v)
	}
	if code, _ := echoVersion(d2, "other.echo"); code != 404 {
		t.Fatalf("disable lost across restart: %d", code)
	}
	d2.Do(t, "DELETE", "/v1/skills/svc/pin", nil)
	d2.Do(t, "POST", "/v1/skills/other/enable", nil)
	if _, v := echoVersion(d2, "svc.echo"); v != "2.0.0" {
		t.Fatalf("unpin: %s", v)
	}
	if code, _ := echoVersion(d2, "other.echo"); code != 200 {
		t.Fatalf("enable: %d", code)
	}
	if err := d2.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// A corrupt state file is kept aside and the host starts with defaults.
	os.WriteFile(filepath.Join(state, "state.json"), []byte("{not json"), 0o600)
	d3 := testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d3)
	if _, v := echoVersion(d3, "svc.echo"); v != "2.0.0" {
		t.Fatalf("after corrupt state: %s", v)
	}
	aside, _ := filepath.Glob(filepath.Join(state, "state.json.corrupt-*"))
	if len(aside) != 1 || !strings.Contains(d3.Logs(), "corrupt") {
		t.Fatalf("corrupt file not kept aside: %v\n%s", aside, d3.Logs())
	}
}

func TestEventsAndMetrics(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := startDaemon(t, tree)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := sse(t, ctx, d, "/v1/events")
	first := <-evs
	if first[0] != "state" || !strings.Contains(first[1], `"svc"`) {
		t.Fatalf("first event = %v", first)
	}
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.1.0", Binary: skillBin})
	seen := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for !(seen["lifecycle 1.1.0 active"] && seen["registry 1.1.0 put"] && seen["lifecycle 1.0.0 stopped"]) {
		select {
		case e := <-evs:
			var ev sseEvent
			json.Unmarshal([]byte(e[1]), &ev)
			seen[ev.Type+" "+ev.Version+" "+ev.State] = true
		case <-deadline:
			t.Fatalf("swap events not seen: %v", seen)
		}
	}
	// awaitEvent reads the stream until an event satisfies ok: the signal
	// that the host acted, rather than a guess at how long it takes.
	awaitEvent := func(what string, ok func(ev sseEvent) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case e, open := <-evs:
				if !open {
					t.Fatalf("event stream ended before %s", what)
				}
				var ev sseEvent
				json.Unmarshal([]byte(e[1]), &ev)
				if ok(ev) {
					return
				}
			case <-deadline:
				t.Fatalf("no event for %s within 10s\n%s", what, d.Logs())
			}
		}
	}

	// A version folder that is not valid: counted once as a scan error.
	stage := filepath.Join(tree, ".staging", "broken")
	if err := os.MkdirAll(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), []byte(`{"manifest_version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stage, filepath.Join(tree, "svc", "0.9.0")); err != nil {
		t.Fatal(err)
	}
	awaitEvent("svc@0.9.0 found invalid", func(ev sseEvent) bool {
		return ev.Type == "lifecycle" && ev.Version == "0.9.0" && ev.State == "invalid"
	})

	// A crash of the serving version: it is restarted, and the restart is
	// marked as such on its active event.
	code, body := d.Do(t, "POST", "/v1/tools/svc.crash/invoke", `{"arguments":{}}`)
	wantError(t, "crash", code, body, 502, "skill_crashed")
	awaitEvent("svc@1.1.0 restarted after the crash", func(ev sseEvent) bool {
		return ev.Type == "lifecycle" && ev.Version == "1.1.0" && ev.State == "active" && ev.Restart
	})

	d.Do(t, "POST", "/v1/tools/svc.echo/invoke", `{"arguments":{}}`)
	d.Do(t, "POST", "/v1/tools/svc.fail/invoke", `{"arguments":{}}`)
	code, body = d.Do(t, "GET", "/metrics", nil)
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	// value reads a sample and says whether it is there: a counter with no
	// sample for the labels is absent, never 0, so no check passes on a
	// metric the host does not export.
	value := func(fam string, labels map[string]string) (float64, bool) {
		f, ok := fams[fam]
		if !ok {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, lp := range m.Label {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
		return 0, false
	}
	checks := []struct {
		fam      string
		labels   map[string]string
		min, max float64
	}{
		{"skillhost_calls_total", map[string]string{"tool": "svc.echo", "outcome": "ok"}, 1, 1},
		{"skillhost_calls_total", map[string]string{"tool": "svc.fail", "outcome": "tool_error"}, 1, 1},
		{"skillhost_calls_total", map[string]string{"tool": "svc.crash", "outcome": "skill_crashed"}, 1, 1},
		{"skillhost_call_duration_seconds", map[string]string{"tool": "svc.echo"}, 1, 1},
		{"skillhost_swaps_total", nil, 3, 3}, // 1.0.0, 1.1.0, and 1.1.0 again after the crash
		{"skillhost_swap_duration_seconds", nil, 3, 3},
		{"skillhost_instances", map[string]string{"state": "active"}, 1, 1},
		{"skillhost_instances", map[string]string{"state": "invalid"}, 1, 1},
		{"skillhost_registry_tools", nil, 7, 7},
		{"skillhost_in_flight_calls", map[string]string{"skill": "svc"}, 0, 0},
		{"skillhost_restarts_total", map[string]string{"skill": "svc"}, 1, 1},
		{"skillhost_scan_errors_total", nil, 1, 1},
		{"skillhost_lifecycle_events_total", map[string]string{"state": "crashed"}, 1, 1},
	}
	for _, c := range checks {
		got, ok := value(c.fam, c.labels)
		if !ok || got < c.min || got > c.max {
			t.Errorf("%s%v = %v (present: %v), want %v..%v", c.fam, c.labels, got, ok, c.min, c.max)
		}
	}
}

// sseEvent is the data of a lifecycle or registry event on /v1/events.
type sseEvent struct {
	Type, Skill, Version, State string
	Restart                     bool
}

func TestShutdownDrainsInFlight(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := startDaemon(t, tree)
	_, body := d.Do(t, "POST", "/v1/tools/svc.echo/invoke", `{"arguments":{}}`)
	var r struct {
		Result struct{ PID int } `json:"result"`
	}
	json.Unmarshal(body, &r)
	done := make(chan int, 1)
	go func() {
		code, _ := d.Do(t, "POST", "/v1/tools/svc.sleep/invoke", `{"arguments":{"ms":1000}}`)
		done <- code
	}()
	time.Sleep(200 * time.Millisecond)
	d.Signal(syscall.SIGTERM)
	if code := <-done; code != 200 {
		t.Fatalf("in-flight call during shutdown got %d", code)
	}
	if err := d.Wait(15 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if testenv.Alive(r.Result.PID) {
		t.Fatalf("skill %d outlived the host", r.Result.PID)
	}
}

func TestSIGKILLOfHostTakesSkillsDown(t *testing.T) {
	tree := exampleTree(t)
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := startDaemon(t, tree)
	pids := testenv.Descendants(d.Cmd.Process.Pid)
	_, body := d.Do(t, "POST", "/v1/tools/svc.spawn/invoke", `{"arguments":{}}`)
	var sp struct {
		Result struct{ PID int } `json:"result"`
	}
	json.Unmarshal(body, &sp)
	pids = append(pids, sp.Result.PID)
	if len(pids) < 7 {
		t.Fatalf("expected 6 skills (the 5 examples and svc) and a grandchild, got %v", pids)
	}
	d.Kill()
	if !testenv.WaitFor(2*time.Second, func() bool {
		for _, p := range pids {
			if testenv.Alive(p) {
				return false
			}
		}
		return true
	}) {
		var alive []int
		for _, p := range pids {
			if testenv.Alive(p) {
				alive = append(alive, p)
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		t.Fatalf("processes alive 2 s after SIGKILL of the host: %v", alive)
	}
}

// serveUnix runs a daemon on tree listening on a unix socket, which exists
// before the first scan ends (unlike --addr-file, written after it), and
// returns the socket and a client that dials it. The daemon's output goes to
// logs when given. It is stopped with SIGTERM when the test ends.
func serveUnix(t *testing.T, tree string, logs io.Writer, args ...string) (string, *http.Client) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "host.sock")
	cmd := exec.Command(hostBin, append([]string{"serve", "--skills", tree, "--listen", "unix:" + sock, "--state-dir", t.TempDir()}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return sock, &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", sock)
	}}}
}

// waitUnixReady waits until the daemon behind c answers /readyz with 200.
func waitUnixReady(t *testing.T, c *http.Client) {
	t.Helper()
	if !testenv.WaitFor(20*time.Second, func() bool {
		resp, err := c.Get("http://unix/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}) {
		t.Fatal("unix socket daemon not ready")
	}
}

func TestUnixSocket(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	sock, c := serveUnix(t, tree, nil)
	waitUnixReady(t, c)
	out, err := exec.Command(hostBin, "call", "--addr", "unix:"+sock, "svc.echo", `{"msg":"via socket"}`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "via socket") {
		t.Fatalf("host call over unix socket: %v\n%s", err, out)
	}
}

// TestReadyzWaitsForFirstScan: the API answers at once, /readyz says 503
// until every skill of the first scan has started or failed (here one that
// never completes its handshake and fails at the start timeout), then 200.
func TestReadyzWaitsForFirstScan(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "good", Version: "1.0.0", Binary: skillBin})
	testenv.Install(tree, testenv.Version{Skill: "slow", Version: "1.0.0", Binary: skillBin, Env: map[string]string{"TESTSKILL_MODE": "nohandshake"}})
	var logs testenv.SyncBuffer
	_, c := serveUnix(t, tree, &logs, "--start-timeout", "3s")
	get := func(path string) (int, []byte, error) {
		resp, err := c.Get("http://unix" + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, nil
	}
	var first int
	var firstBody []byte
	started := time.Now()
	if !testenv.WaitFor(10*time.Second, func() bool {
		code, body, err := get("/readyz")
		if err == nil && first == 0 {
			first, firstBody = code, body
		}
		return err == nil && code == 200
	}) {
		t.Fatalf("never ready\n%s", logs.String())
	}
	if first != 503 {
		t.Fatalf("first /readyz answer while a skill was still starting: %d %s", first, firstBody)
	}
	wantError(t, "/readyz before the first scan settled", first, firstBody, 503, "skill_unavailable")
	if took := time.Since(started); took < 2*time.Second {
		t.Fatalf("ready after %v, before the stuck skill's 3 s start timeout", took)
	}
	if _, body, _ := get("/v1/skills/slow"); !strings.Contains(string(body), `"state":"failed"`) {
		t.Fatalf("the stuck skill after ready: %s", body)
	}
	if code, _, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
}

func TestStrictModesRefuseWritableFolders(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "good", Version: "1.0.0", Binary: skillBin})
	dir, _ := testenv.Install(tree, testenv.Version{Skill: "loose", Version: "1.0.0", Binary: skillBin})
	os.Chmod(dir, 0o777)
	d := startDaemon(t, tree)
	_, body := d.Do(t, "GET", "/v1/skills/loose", nil)
	if !strings.Contains(string(body), `"state":"invalid"`) || !strings.Contains(string(body), "writable") {
		t.Fatalf("world-writable folder not refused: %s", body)
	}
	if code, _ := d.Do(t, "POST", "/v1/tools/good.echo/invoke", `{"arguments":{}}`); code != 200 {
		t.Fatalf("good skill affected: %d", code)
	}
}

func TestSecondSignalStopsAtOnce(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", tree, "--state-dir", t.TempDir(), "--grace", "30s")
	waitReady(t, d)
	done := make(chan int, 1)
	go func() {
		code, _ := d.Do(t, "POST", "/v1/tools/svc.sleep/invoke", `{"arguments":{"ms":20000}}`)
		done <- code
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	d.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	d.Signal(syscall.SIGTERM)
	if err := d.Wait(10 * time.Second); err != nil {
		t.Fatalf("exit after a second signal: %v", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("second signal did not cut the 30 s grace short: %v", took)
	}
	if !strings.Contains(d.Logs(), "second signal") {
		t.Errorf("no log line for the second signal")
	}
	<-done
}

// A client following /v1/events must not hold the host's shutdown for the
// whole grace period.
func TestEventStreamDoesNotHoldShutdown(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", tree, "--state-dir", t.TempDir(), "--grace", "30s")
	waitReady(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := sse(t, ctx, d, "/v1/events")
	<-evs // state
	start := time.Now()
	d.Signal(syscall.SIGTERM)
	if err := d.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %v with an event stream open", took)
	}
	last := ""
	for e := range evs {
		last = e[0]
	}
	if last != "shutdown" {
		t.Errorf("the stream did not say the host is shutting down (last event %q)", last)
	}
}

func TestAdminAndInvokeTokens(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	dir := t.TempDir()
	admin, invoke := filepath.Join(dir, "admin"), filepath.Join(dir, "invoke")
	os.WriteFile(admin, []byte("admin-token-0123456789abcdef\n"), 0o600)
	os.WriteFile(invoke, []byte("invoke-token-0123456789abcdef\n"), 0o600)
	d := startDaemonNoWait(t, tree, "--token-file", admin, "--invoke-token-file", invoke)
	d.Token = "invoke-token-0123456789abcdef"
	waitReady(t, d)
	if code, body := d.Do(t, "POST", "/v1/tools/svc.echo/invoke", `{"arguments":{}}`); code != 200 {
		t.Fatalf("invoke token cannot call: %d %s", code, body)
	}
	if code, _ := d.Do(t, "GET", "/v1/skills", nil); code != 200 {
		t.Fatalf("invoke token cannot read: %d", code)
	}
	for _, req := range [][2]string{{"POST", "/v1/skills/svc/disable"}, {"PUT", "/v1/skills/svc/pin"}, {"POST", "/v1/rescan"}} {
		code, body := d.Do(t, req[0], req[1], `{"version":"1.0.0"}`)
		wantError(t, "invoke token "+req[1], code, body, 403, "forbidden")
	}
	d.Token = "admin-token-0123456789abcdef"
	if code, body := d.Do(t, "POST", "/v1/skills/svc/disable", nil); code != 200 {
		t.Fatalf("admin token cannot disable: %d %s", code, body)
	}
}

// TestSkillGOMAXPROCSFlag: `host serve --skill-gomaxprocs 1` starts a skill
// whose manifest sets no GOMAXPROCS with one processor (as the skill's Go
// runtime reports it over the API), and refuses a negative value.
func TestSkillGOMAXPROCSFlag(t *testing.T) {
	out, err := exec.Command(hostBin, "serve", "--skill-gomaxprocs", "-1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `invalid value "-1" for flag -skill-gomaxprocs`) {
		t.Fatalf("serve --skill-gomaxprocs -1: %v\n%s", err, out)
	}
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := startDaemon(t, tree, "--skill-gomaxprocs", "1")
	code, body := d.Do(t, "POST", "/v1/tools/svc.env/invoke", map[string]any{"arguments": map[string]any{}})
	var got struct {
		Result struct {
			GOMAXPROCS int `json:"gomaxprocs"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &got); code != 200 || err != nil || got.Result.GOMAXPROCS != 1 {
		t.Fatalf("svc.env under --skill-gomaxprocs 1: %d %s", code, body)
	}
}

// A stop is heard while the first scan still waits on a skill stuck in its
// handshake: the host does not sit out the start timeout first.
func TestStopBeforeFirstScanSettles(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "good", Version: "1.0.0", Binary: skillBin})
	testenv.Install(tree, testenv.Version{Skill: "slow", Version: "1.0.0", Binary: skillBin, Env: map[string]string{"TESTSKILL_MODE": "nohandshake"}})
	sock := filepath.Join(t.TempDir(), "host.sock")
	addrFile := filepath.Join(t.TempDir(), "addr")
	var logs testenv.SyncBuffer
	cmd := exec.Command(hostBin, "serve", "--skills", tree, "--listen", "unix:"+sock, "--state-dir", t.TempDir(),
		"--start-timeout", "60s", "--grace", "2s", "--addr-file", addrFile)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	if !testenv.WaitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "listening") }) {
		t.Fatalf("never listened\n%s", logs.String())
	}
	time.Sleep(300 * time.Millisecond) // the first scan is under way, waiting on slow
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM, with a 60 s start timeout pending\n%s", logs.String())
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("stop took %v", took)
	}
	if _, err := os.Stat(addrFile); !os.IsNotExist(err) {
		t.Errorf("--addr-file written by a daemon stopped before it was ready: %v", err)
	}
}

// A second daemon on the socket of a live one refuses to start, and the
// first keeps its socket and its clients.
func TestUnixSocketInUseIsRefused(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	sock, c := serveUnix(t, tree, nil)
	waitUnixReady(t, c)
	out, err := exec.Command(hostBin, "serve", "--skills", tree, "--listen", "unix:"+sock, "--state-dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another process serves on "+sock) {
		t.Fatalf("second daemon on a live socket: %v\n%s", err, out)
	}
	resp, err := c.Get("http://unix/healthz")
	if err != nil {
		t.Fatalf("the first daemon lost its socket: %v", err)
	}
	resp.Body.Close()
}

// A web page cannot drive a loopback daemon without a token: a cross-site
// request that changes something is refused, and so is any request whose
// Host is not loopback (DNS rebinding); the console's own origin and
// clients that are not browsers pass.
func TestBrowserRequestsRefused(t *testing.T) {
	tree := t.TempDir()
	testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", tree, "--state-dir", t.TempDir())
	waitReady(t, d)
	send := func(method, path, host string, headers map[string]string) (int, string) {
		req, err := http.NewRequest(method, d.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if code, body := send("POST", "/v1/skills/svc/disable", "", crossSite); code != 403 || !strings.Contains(body, "cross-origin request refused") {
		t.Fatalf("cross-site disable = %d %s", code, body)
	}
	if code, body := send("GET", "/v1/skills", "rebind.evil.example:7070", nil); code != 403 || !strings.Contains(body, "refused") {
		t.Fatalf("request for a rebound host name = %d %s", code, body)
	}
	if _, body := d.Do(t, "GET", "/v1/skills/svc", nil); !strings.Contains(string(body), `"disabled":false`) {
		t.Fatalf("a cross-site request disabled the skill: %s", body)
	}
	for _, h := range []map[string]string{{"Sec-Fetch-Site": "same-origin", "Origin": d.URL}, nil} {
		for _, action := range []string{"disable", "enable"} {
			if code, body := send("POST", "/v1/skills/svc/"+action, "", h); code != 200 {
				t.Fatalf("%s with %v = %d %s", action, h, code, body)
			}
		}
	}
	if code, body := send("GET", "/v1/skills", "localhost:7070", nil); code != 200 {
		t.Fatalf("request for localhost = %d %s", code, body)
	}
}
