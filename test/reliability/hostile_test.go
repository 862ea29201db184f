//go:build linux

package reliability

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/sdk/proctree"
)

// hostileCase is one broken or hostile skill installed in the shared tree.
type hostileCase struct {
	skill  string
	bin    string
	env    map[string]string
	limits map[string]any
}

var hostileCases = []hostileCase{
	{skill: "garbage-before", bin: "garbage", env: map[string]string{"GARBAGE_WHEN": "before"}},
	{skill: "garbage-addr", bin: "garbage", env: map[string]string{"GARBAGE_WHEN": "fakeaddr"}},
	{skill: "garbage-after", bin: "garbage"},
	{skill: "stuck", bin: "stuck"},
	{skill: "exit-start", bin: "exitnow"},
	{skill: "exit-describe", bin: "exitnow", env: map[string]string{"EXIT_WHEN": "describe"}},
	{skill: "slow-describe", bin: "raw", env: map[string]string{"RAW_MODE": "slowdescribe"}},
	{skill: "hang", bin: "hang", limits: map[string]any{"timeout_ms": 500}},
	{skill: "proto", bin: "raw", env: map[string]string{"RAW_MODE": "protocol"}, limits: map[string]any{"max_response_bytes": 1024}},
	{skill: "many-tools", bin: "raw", env: map[string]string{"RAW_MODE": "manytools"}},
	{skill: "huge-schema", bin: "raw", env: map[string]string{"RAW_MODE": "hugeschema"}},
	{skill: "huge-describe", bin: "raw", env: map[string]string{"RAW_MODE": "hugedescribe"}},
	{skill: "forker", bin: "forker"},
	{skill: "envsnoop", bin: "envsnoop"},
}

// secret is set in the daemon's environment; no skill may see it.
const secret = "sk-reliability-host-secret-0123456789"

// TestHostileSkills serves a good skill beside every hostile one in one
// daemon. Each hostile skill fails (or is contained) with a clear reason in
// /v1/skills, and the good skill answers after each case.
func TestHostileSkills(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	for _, c := range hostileCases {
		install(t, tree, c.skill, "1.0.0", hostile[c.bin], c.env, c.limits)
	}
	start := time.Now()
	h := startHost(t, tree, hostOpts{
		env:  []string{"OPENAI_API_KEY=" + secret, "SKILLHOST_TEST_SECRET=" + secret},
		args: []string{"--max-parallel-starts", "16"},
	})
	t.Logf("first scan settled in %v with %d hostile skills", time.Since(start).Round(time.Millisecond), len(hostileCases))
	good := func(t *testing.T) {
		t.Helper()
		h.with(t).wantCall("good.echo", `{"msg":"still here"}`, 200, "")
	}
	failed := func(t *testing.T, skill string, parts ...string) {
		t.Helper()
		h := h.with(t)
		s := h.skill(skill)
		v, _ := s.version("1.0.0")
		if v.State != "failed" || s.Active != "" {
			t.Fatalf("%s: state %s, active %q, want failed: %s", skill, v.State, s.Active, v.reason())
		}
		for _, p := range parts {
			if !strings.Contains(v.LastError, p) {
				t.Errorf("%s: last_error %q does not say %q", skill, v.LastError, p)
			}
		}
		h.wantCall(skill+".echo", `{}`, 404, "unknown_tool")
		t.Logf("%s: %s", skill, v.reason())
	}

	t.Run("garbage before the handshake", func(t *testing.T) {
		failed(t, "garbage-before", "Unrecognized remote plugin message", "Welcome to garbage")
		good(t)
	})
	t.Run("a handshake naming an address nothing serves", func(t *testing.T) {
		failed(t, "garbage-addr", "127.0.0.1:1")
		good(t)
	})
	t.Run("garbage after the handshake", func(t *testing.T) {
		h := h.with(t)
		// The skill writes junk to fd 1, os.Stdout and stderr for a second;
		// it keeps serving, and so does everything else.
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			h.wantCall("garbage-after.echo", `{}`, 200, "")
			good(t)
		}
		if v, _ := h.skill("garbage-after").version("1.0.0"); v.State != "active" || v.Restarts != 0 {
			t.Fatalf("garbage-after: %s, restarts %d", v.reason(), v.Restarts)
		}
	})
	t.Run("never completes the handshake", func(t *testing.T) {
		failed(t, "stuck", "timeout while waiting for plugin to start")
		good(t)
	})
	t.Run("exits at once", func(t *testing.T) {
		h := h.with(t)
		failed(t, "exit-start", "start:")
		if v, _ := h.skill("exit-start").version("1.0.0"); !strings.Contains(v.LastError, "exit") {
			knownBug(t, "a skill that exits before the handshake is reported as %q: neither the exit nor its status or stderr is named (pkg/loader instance.start)",
				strings.SplitN(v.LastError, "\n", 2)[0])
		}
		failed(t, "exit-describe", "describe")
		good(t)
	})
	t.Run("describe never answers", func(t *testing.T) {
		failed(t, "slow-describe", "describe", "DeadlineExceeded")
		good(t)
	})
	t.Run("hangs in a call and ignores cancellation", func(t *testing.T) { testHang(t, h.with(t)) })
	t.Run("breaks the protocol", func(t *testing.T) {
		h := h.with(t)
		h.wantCall("proto.good", `{}`, 200, "")
		for _, c := range []struct{ tool, args, code, says string }{
			{"badjson", `{}`, "invalid_response", "not valid JSON"},
			{"empty", `{}`, "invalid_response", "not valid JSON"},
			{"liar", `{}`, "invalid_response", "/answer"},
			{"oversize", `{"bytes":2000}`, "response_too_large", "1024"},      // caught by the registry
			{"oversize", `{"bytes":300000}`, "response_too_large", "1024"},    // caught by gRPC's cap
			{"oversize", `{"bytes":100000000}`, "response_too_large", "1024"}, // 100 MB: never buffered
		} {
			_, _, body := h.invoke("proto."+c.tool, c.args)
			code, msg, _ := errorOf(body)
			if code != c.code || !strings.Contains(msg, c.says) {
				t.Errorf("proto.%s %s = %s, want %s saying %q", c.tool, c.args, body, c.code, c.says)
			}
			good(t)
		}
		pid := activePID(t, h, "proto")
		h.wantCall("proto.panic", `{}`, 502, "skill_crashed")
		good(t)
		v := h.waitSkill("proto", 10*time.Second, "restarted after the panic", func(s skillView) bool {
			v, _ := s.version("1.0.0")
			return v.State == "active" && v.PID != pid && v.Restarts >= 1
		})
		t.Logf("proto restarted after a panic: %+v", v.Versions[0])
		h.wantCall("proto.good", `{}`, 200, "")
	})
	t.Run("describes 10,000 tools", func(t *testing.T) { testManyTools(t, h.with(t)) })
	t.Run("describes a 10 MiB schema", func(t *testing.T) {
		h := h.with(t)
		failed(t, "huge-schema", "over the 1048576-byte cap")
		h.wantCall("huge-schema.good", `{}`, 404, "unknown_tool")
		good(t)
	})
	t.Run("describes 20 MiB of tools", func(t *testing.T) {
		failed(t, "huge-describe", "larger than the 16777216-byte cap")
		good(t)
	})
	t.Run("forks children and dies", func(t *testing.T) { testForker(t, h.with(t)) })
	t.Run("reads the host's environment", func(t *testing.T) { testEnvSnoop(t, h.with(t)) })

	// Every process the host runs is a serving skill's: nothing of the
	// failed starts is left.
	t.Run("no stray processes", func(t *testing.T) { checkOnlyActive(t, h.with(t)) })
}

// activePID returns the pid of skill's active version.
func activePID(t testing.TB, h *host, skill string) int {
	t.Helper()
	s := h.skill(skill)
	v, ok := s.version(s.Active)
	if !ok || v.PID == 0 {
		t.Fatalf("%s has no active process: %+v", skill, s)
	}
	return v.PID
}

// checkOnlyActive checks that the host's descendants are exactly the
// processes of active versions (once draining ones are gone).
func checkOnlyActive(t testing.TB, h *host) {
	t.Helper()
	var extra []int
	ok := testenv.WaitFor(10*time.Second, func() bool {
		want := map[int]bool{}
		for _, s := range h.skills().Skills {
			for _, v := range s.Versions {
				if v.State == "active" && v.PID > 0 {
					want[v.PID] = true
				}
			}
		}
		extra = nil
		for _, p := range testenv.SkillProcesses(h.pid()) {
			if !want[p] {
				extra = append(extra, p)
			}
		}
		return len(extra) == 0
	})
	if !ok {
		t.Errorf("processes under the host that serve no active version: %v", describe(extra))
	}
}

// describe names each process by its pid, parent, session and command line.
func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p, _ := proctree.Stat(pid)
		out = append(out, fmt.Sprintf("%d (ppid %d, sid %d) %q", pid, p.PPID, p.SID, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

func testHang(t *testing.T, h *host) {
	// timeout_ms 500: the host answers timeout on time, though the handler
	// never returns, and the skill keeps serving its other tool.
	for i := 0; i < 3; i++ {
		start := time.Now()
		wantTimeout(t, h, "hang.hang")
		if d := time.Since(start); d < 450*time.Millisecond || d > 3*time.Second {
			t.Errorf("timeout answered after %v, want about 500ms", d)
		}
		h.wantCall("hang.echo", `{}`, 200, "")
	}
	if v, _ := h.skill("hang").version("1.0.0"); v.InFlight != 0 {
		t.Errorf("in_flight %d after the timed-out calls returned", v.InFlight)
	}
	pid1 := activePID(t, h, "hang")

	// A hung call still in flight when its version is replaced: the grace
	// period (2s) ends, the version is retired, the call fails retryably
	// and the process is killed.
	install(t, h.tree, "hang", "1.1.0", hostile["hang"], nil, map[string]any{"timeout_ms": 60000})
	h.waitVersionState("hang", "1.1.0", "active", 10*time.Second)
	testenv.WaitFor(3*time.Second, func() bool { return !testenv.Alive(pid1) })
	if testenv.Alive(pid1) {
		t.Errorf("replaced hang 1.0.0 (pid %d) still alive", pid1)
	}
	pid2 := activePID(t, h, "hang")
	type res struct {
		code string
		body []byte
		took time.Duration
	}
	ch := make(chan res, 1)
	go func() {
		start := time.Now()
		_, out, err := h.do("POST", "/v1/tools/hang.hang/invoke", `{"arguments":{}}`)
		c, _, _ := errorOf(out)
		if err != nil {
			c = "transport: " + err.Error()
		}
		ch <- res{c, out, time.Since(start)}
	}()
	h.waitSkill("hang", 5*time.Second, "call in flight", func(s skillView) bool {
		v, _ := s.version("1.1.0")
		return v.InFlight == 1
	})
	install(t, h.tree, "hang", "1.2.0", hostile["hang"], nil, map[string]any{"timeout_ms": 500})
	r := <-ch
	if r.code != "skill_unavailable" || !strings.Contains(string(r.body), "retired") || r.took > 10*time.Second {
		t.Errorf("hung call across a swap: %s %s after %v, want skill_unavailable (retired) after the 2s grace", r.code, r.body, r.took)
	}
	if !testenv.WaitFor(3*time.Second, func() bool { return !testenv.Alive(pid2) }) {
		t.Errorf("retired hang 1.1.0 (pid %d) still alive", pid2)
	}
	// Disabling kills the last one, whose handler is also stuck.
	wantTimeout(t, h, "hang.hang")
	pid3 := activePID(t, h, "hang")
	if code, body := h.must("POST", "/v1/skills/hang/disable", nil); code != 200 {
		t.Fatalf("disable: %d %s", code, body)
	}
	if !testenv.WaitFor(3*time.Second, func() bool { return !testenv.Alive(pid3) }) {
		t.Errorf("disabled hang (pid %d) still alive", pid3)
	}
	t.Logf("hung call across a swap answered %s after %v", r.code, r.took.Round(time.Millisecond))
}

// wantTimeout calls a tool that never answers and expects 504 timeout. A
// 502 invalid_response carrying gRPC's DeadlineExceeded is the race that
// TestDeadlineIsAlwaysTimeout measures: reported, not failed on here.
func wantTimeout(t *testing.T, h *host, tool string) {
	t.Helper()
	status, code, body := h.invoke(tool, `{}`)
	switch {
	case status == 504 && code == "timeout":
	case code == "invalid_response" && strings.Contains(string(body), "DeadlineExceeded"):
		knownBug(t, "a call past its deadline answered %d %s: %s", status, code, body)
	default:
		t.Fatalf("%s: %d %s, want 504 timeout", tool, status, body)
	}
}

func testManyTools(t *testing.T, h *host) {
	s := h.skill("many-tools")
	v, _ := s.version("1.0.0")
	t.Logf("many-tools: %s, %d tools", v.reason(), len(v.Tools))
	// Whatever the host decides, it decides it promptly and stays
	// responsive: search and listing over the whole set answer quickly.
	for _, p := range []string{"/healthz", "/v1/tools?q=raw+tool&limit=5", "/v1/openai/tools?q=t42&limit=5"} {
		start := time.Now()
		code, body := h.must("GET", p, nil)
		if code != 200 || time.Since(start) > 2*time.Second {
			t.Errorf("GET %s: %d after %v: %.200s", p, code, time.Since(start), body)
		}
	}
	h.wantCall("good.echo", `{}`, 200, "")
	switch v.State {
	case "active":
		h.wantCall("many-tools.t9999", `{}`, 200, "")
		knownBug(t, "a binary may describe %d tools although a manifest may list at most 256 (pkg/loader checkDescribe has no cap)", len(v.Tools))
	case "failed":
		if v.LastError == "" {
			t.Errorf("many-tools failed without a reason")
		}
	default:
		t.Errorf("many-tools in state %s", v.State)
	}
}

func testForker(t *testing.T, h *host) {
	pid := activePID(t, h, "forker")
	_, _, body := h.invoke("forker.fork_and_die", `{"n":2,"escape":true}`)
	var out struct {
		Result struct {
			Children []int `json:"children"`
			Escaped  []int `json:"escaped"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Result.Children) < 2 {
		t.Fatalf("fork_and_die = %s", body)
	}
	t.Cleanup(func() { reap(out.Result.Children...); reap(out.Result.Escaped...) })
	// The skill dies; the host sees the crash, kills the process group and
	// restarts the skill.
	h.waitSkill("forker", 10*time.Second, "restarted", func(s skillView) bool {
		v, _ := s.version("1.0.0")
		return v.State == "active" && v.PID != pid
	})
	if !testenv.WaitFor(2*time.Second, func() bool { return len(alive(out.Result.Children)) == 0 }) {
		t.Errorf("children of the dead skill still running: %v", alive(out.Result.Children))
	}
	// The one that left the group with setsid was handed to the host (a
	// child subreaper) when the skill died, and the host killed it.
	if !testenv.WaitFor(2*time.Second, func() bool { return len(alive(out.Result.Escaped)) == 0 }) {
		t.Errorf("a child that left the skill's process group with setsid (pid %v) outlives the skill by 2 s", alive(out.Result.Escaped))
	}
	h.wantCall("forker.echo", `{}`, 200, "")
	h.wantCall("good.echo", `{}`, 200, "")

	// A skill the host stops (here: disabled) takes its children along,
	// the one in a session of its own too.
	_, _, body = h.invoke("forker.fork", `{"n":1,"escape":true}`)
	var live struct {
		Result struct {
			Children []int `json:"children"`
			Escaped  []int `json:"escaped"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &live); err != nil || len(live.Result.Escaped) != 1 {
		t.Fatalf("fork = %s", body)
	}
	procs := append(live.Result.Children, live.Result.Escaped...)
	t.Cleanup(func() { reap(procs...) })
	if code, body := h.must("POST", "/v1/skills/forker/disable", nil); code != 200 {
		t.Fatalf("disable: %d %s", code, body)
	}
	if !testenv.WaitFor(5*time.Second, func() bool { return len(alive(procs)) == 0 }) {
		t.Errorf("children of a disabled skill still running: %v", alive(procs))
	}
	if code, body := h.must("POST", "/v1/skills/forker/enable", nil); code != 200 {
		t.Fatalf("enable: %d %s", code, body)
	}
	h.waitVersionState("forker", "1.0.0", "active", 10*time.Second)
	h.wantCall("good.echo", `{}`, 200, "")
}

// TestSkillUserKeepsHostSecrets runs the skills of a root host as
// --skill-user nobody: they run unprivileged, and neither their environment
// nor /proc/<host>/environ holds the host's secret. It needs root, as CI
// has.
func TestSkillUserKeepsHostSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: --skill-user switches the skills' account")
	}
	t.Parallel()
	tree := t.TempDir()
	// t.TempDir makes 0700 folders; the skill's account must reach its own.
	for _, d := range []string{filepath.Dir(tree), tree} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	install(t, tree, "envsnoop", "1.0.0", hostile["envsnoop"], nil, nil)
	h := startHost(t, tree, hostOpts{
		env:  []string{"OPENAI_API_KEY=" + secret, "SKILLHOST_TEST_SECRET=" + secret},
		args: []string{"--skill-user", "nobody"},
	})
	if out := testEnvSnoop(t, h); out.UID == 0 {
		t.Errorf("the skill runs as root despite --skill-user nobody")
	}
}

// snoopResult is what the envsnoop skill reports.
type snoopResult struct {
	Env           []string `json:"env"`
	UID           int      `json:"uid"`
	PPID          int      `json:"ppid"`
	ParentEnviron string   `json:"parent_environ"`
}

// testEnvSnoop checks that no host variable reaches the envsnoop skill,
// neither in its environment nor through /proc/<host>/environ: the host is
// non-dumpable, and a skill of a root host runs without CAP_SYS_PTRACE, so
// even a root skill cannot read it.
func testEnvSnoop(t *testing.T, h *host) snoopResult {
	body := h.wantCall("envsnoop.snoop", `{}`, 200, "")
	var out struct {
		Result snoopResult `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	for _, kv := range out.Result.Env {
		if strings.Contains(kv, secret) || strings.HasPrefix(kv, "OPENAI_API_KEY=") || strings.HasPrefix(kv, "SKILLHOST_") && !strings.HasPrefix(kv, "SKILLHOST_SKILL=") {
			t.Errorf("the skill's environment holds a host variable: %s", kv)
		}
	}
	if out.Result.PPID != h.pid() {
		t.Logf("skill's parent is %d, the host is %d", out.Result.PPID, h.pid())
	}
	if strings.Contains(out.Result.ParentEnviron, secret) {
		t.Errorf("a skill running as uid %d reads the host's OPENAI_API_KEY from /proc/%d/environ", out.Result.UID, out.Result.PPID)
	} else {
		t.Logf("/proc/<host>/environ as the skill sees it (uid %d): %.100q", out.Result.UID, out.Result.ParentEnviron)
	}
	t.Logf("the skill's own environment: %d variables, none of the host's", len(out.Result.Env))
	return out.Result
}
