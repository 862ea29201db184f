package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/sdk/skilltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSkillDescribe(t *testing.T) {
	c := skilltest.Start(t, newSkill(newRunner(t, Limits{})))
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "coderunner" || len(d.Tools) != 1 || d.Tools[0].Name != "run_js" {
		t.Fatalf("describe = %+v", d)
	}
	schema := string(d.Tools[0].InputSchema)
	if !strings.Contains(schema, `"required":["code"]`) || !strings.Contains(schema, `"maximum":20000`) {
		t.Errorf("run_js schema = %s", schema)
	}
}

func TestSkillInvoke(t *testing.T) {
	c := skilltest.Start(t, newSkill(newRunner(t, Limits{})))
	res, err := c.Call(context.Background(), "run_js", map[string]any{"code": fibonacci})
	var out runOut
	if err != nil || json.Unmarshal(res, &out) != nil || !out.OK || !strings.Contains(out.Stdout, "63245986") {
		t.Fatalf("run_js = %s, %v", res, err)
	}
	res, err = c.Call(context.Background(), "run_js", map[string]any{"code": "while (true) {}", "timeout_ms": 100})
	if err != nil || !strings.Contains(string(res), `"ok":false`) || !strings.Contains(string(res), `"code":"timeout"`) {
		t.Fatalf("run_js of an endless loop = %s, %v", res, err)
	}
	var te *skilltest.ToolError
	_, err = c.Call(context.Background(), "run_js", map[string]any{"code": "```py\nprint(1)\n```"})
	if !errors.As(err, &te) || te.Code != "unsupported_language" {
		t.Fatalf("run_js of Python = %v", err)
	}
}

// TestBinary builds the real skill, checks --manifest and runs scripts in
// it as a subprocess the way the host does.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the skill binary")
	}
	bin := skilltest.Build(t, ".")
	m := skilltest.Manifest(t, bin)
	if m.Name != "coderunner" || m.Entrypoint != "coderunner" || strings.Join(m.Tools, ",") != "run_js" ||
		m.Limits == nil || m.Limits.TimeoutMS != 30_000 {
		t.Errorf("manifest = %+v", m)
	}
	c := skilltest.Exec(t, bin)
	ctx := context.Background()
	res, err := c.Call(ctx, "run_js", map[string]any{"code": fibonacci})
	if err != nil || !strings.Contains(string(res), `"stdout":"The 39th Fibonacci number is 63245986\n"`) ||
		!strings.Contains(string(res), `"result":{"n":39,"value":63245986}`) {
		t.Fatalf("run_js over a subprocess = %s, %v", res, err)
	}
	res, err = c.Call(ctx, "run_js", map[string]any{"code": "for (;;) console.log('spam')"})
	if err != nil || !strings.Contains(string(res), `"code":"output_limit"`) || !strings.Contains(string(res), `"stdout_truncated":true`) {
		t.Fatalf("run_js with endless output = %.300s, %v", res, err)
	}
	// The process survives all of that and still answers.
	res, err = c.Call(ctx, "run_js", map[string]any{"code": "6 * 7"})
	if err != nil || !strings.Contains(string(res), `"result":42`) {
		t.Fatalf("run_js after the limits = %s, %v", res, err)
	}

	// Doubling a string allocates more each step than the last: the
	// watchdog stops it at its limit when it samples in time, and the
	// last resort ends the process when one step jumps past the hard
	// limit. Either way the script ends; which way is a race with the 5 ms
	// sampling, so both are accepted, and the test says which.
	c = skilltest.Exec(t, bin)
	res, err = c.Call(ctx, "run_js", map[string]any{"code": "let s = 'x'; for (;;) s = s + s"})
	switch {
	case err == nil && strings.Contains(string(res), `"code":"memory_limit"`):
		t.Logf("doubling a string: stopped by the watchdog: %s", res)
	case err != nil:
		t.Logf("doubling a string: the process ended: %v", err)
	default:
		t.Fatalf("run_js doubling a string = %s", res)
	}

	// A built-in written in Go ignores the interrupt; filling a huge array
	// passes the hard heap limit and the watchdog ends the process, which
	// the host would report as skill_crashed and restart.
	c = skilltest.Exec(t, bin)
	res, err = c.Call(ctx, "run_js", map[string]any{"code": "const a = []; a.length = 2e8; a.fill(0); a.length"})
	if err == nil {
		t.Fatalf("run_js filling 2e8 elements = %s; want the process to end", res)
	}
	t.Logf("filling 2e8 elements: %v", err)
}
