package loader

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/mcprt"
	"github.com/skillhost/skillhost/pkg/registry"
)

const (
	everythingJS = testenv.EverythingJS
	memoryJS     = testenv.MemoryJS
)

func npmServers(t *testing.T) (dir, node string) { return testenv.NPMServers(t) }

// mcpHarness is a harness whose loader allows node for "mcp" versions.
func mcpHarness(t *testing.T, mod func(*Config)) *harness {
	_, node := npmServers(t)
	return newHarness(t, func(c *Config) {
		c.Interpreters = mcprt.Interpreters{"node": node}
		c.StartTimeout = 60 * time.Second // node under -race on a shared machine
		if mod != nil {
			mod(c)
		}
	})
}

// installMCP installs skill/version from src (testenv.InstallMCP).
func (h *harness) installMCP(skill, version, src string, edit func(m map[string]any), args ...string) string {
	h.t.Helper()
	dir, err := testenv.InstallMCP(h.root, skill, version, src, edit, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return dir
}

// installScript installs a one-file node server.
func (h *harness) installScript(skill, version, script string, edit func(m map[string]any)) {
	h.t.Helper()
	src := h.t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "server.js"), []byte(script), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.installMCP(skill, version, src, edit, "server.js")
}

func (h *harness) call(tool, args string) (*registry.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.reg.Invoke(ctx, tool, []byte(args))
}

// waitServing waits until tool answers from version.
func (h *harness) waitServing(tool, version string, timeout time.Duration) {
	h.t.Helper()
	skill, _, _ := strings.Cut(tool, ".")
	if !testenv.WaitFor(timeout, func() bool {
		res, err := h.call(tool, `{"message":"ping"}`)
		return err == nil && res.Version == version
	}) {
		h.t.Fatalf("%s never served from %s; status %+v", tool, version, h.status(skill))
	}
}

func activePID(t *testing.T, st SkillStatus) int {
	t.Helper()
	v, ok := versionState(st, st.Active)
	if !ok || v.PID == 0 {
		t.Fatalf("no active pid: %+v", st)
	}
	return v.PID
}

// TestMCPServersAsSkills drops two public npm servers into the tree beside
// broken ones: the good ones serve as skill.tool with their runtime shown,
// and each broken one fails alone, with a named reason.
func TestMCPServersAsSkills(t *testing.T) {
	src, _ := npmServers(t)
	t.Setenv("MCP_LOADER_CANARY", "must-not-leak")
	h := mcpHarness(t, nil)
	h.installMCP("everything", "1.0.0", src, nil, everythingJS, "stdio")
	h.installMCP("memory", "1.0.0", src, func(m map[string]any) {
		m["env"] = map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}
	}, memoryJS)
	h.installScript("junk", "1.0.0", `process.stdout.write("hello, I am not JSON-RPC\n"); setTimeout(() => process.exit(3), 50);`, nil)
	h.installScript("ruby", "1.0.0", `// never run`, func(m map[string]any) { m["command"] = "ruby" })
	h.start()

	for _, tool := range []string{"everything.echo", "everything.get-sum", "memory.create_entities", "memory.read_graph"} {
		if _, ok := h.reg.Snapshot().Tool(tool); !ok {
			t.Errorf("%s is not in the registry", tool)
		}
	}
	res, err := h.call("everything.echo", `{"message":"hi"}`)
	if err != nil || string(res.Result) != `"Echo: hi"` || res.Version != "1.0.0" {
		t.Fatalf("everything.echo = %+v, %v", res, err)
	}
	if env, err := h.call("everything.get-env", `{}`); err != nil || strings.Contains(string(env.Result), "MCP_LOADER_CANARY") {
		t.Errorf("get-env shows the host's environment (or failed: %v): %.300s", err, env.Result)
	}
	if _, err := h.call("memory.create_entities", `{"entities":[{"name":"skillhost","entityType":"project","observations":["hosts skills"]}]}`); err != nil {
		t.Fatal(err)
	}
	if g, err := h.call("memory.read_graph", `{}`); err != nil || !strings.Contains(string(g.Result), "hosts skills") {
		t.Fatalf("memory.read_graph = %v, %v", g, err)
	}
	// Limits and argument validation are the registry's, as for any skill.
	if _, err := h.call("everything.get-sum", `{"a":"two","b":3}`); registry.CodeOf(err) != registry.CodeInvalidArguments {
		t.Errorf("get-sum with a string = %v, want invalid_arguments", err)
	}
	// The prefilter finds MCP tools like any others.
	if hits := h.reg.Snapshot().Search(registry.Query{Text: "knowledge graph entities", Limit: 3}); len(hits) == 0 || hits[0].Tool.Skill != "memory" {
		t.Errorf("search for the memory tools: %+v", hits)
	}

	for _, tc := range []struct{ skill, want string }{
		{"everything", ""}, {"memory", ""},
		{"junk", "exited"}, {"ruby", `command "ruby": ` + mcprt.ErrUnknownInterpreter.Error()},
	} {
		st := h.status(tc.skill)
		v, _ := versionState(st, "1.0.0")
		if v.Runtime != manifest.RuntimeMCP {
			t.Errorf("%s: runtime %q, want mcp", tc.skill, v.Runtime)
		}
		if tc.want == "" {
			if st.Active != "1.0.0" || v.State != StateActive || len(v.Tools) == 0 {
				t.Errorf("%s: %+v", tc.skill, st)
			}
			continue
		}
		if v.State != StateFailed || !strings.Contains(v.LastError, tc.want) {
			t.Errorf("%s: state %s, error %q; want failed with %q", tc.skill, v.State, v.LastError, tc.want)
		}
	}
	// server-everything adds tools once initialized and says so: the
	// loader takes its list_changed as a re-describe.
	if !testenv.WaitFor(30*time.Second, func() bool {
		return slices.ContainsFunc(h.events(), func(e Event) bool {
			return e.Skill == "everything" && e.Reason == "the server's tool list changed"
		})
	}) {
		t.Errorf("no re-describe after server-everything's list_changed: %+v", h.events())
	}
}

// TestMCPHotSwapUnderLoad swaps an npm server's version under 8 callers:
// no call fails, and the old server is stopped once drained.
func TestMCPHotSwapUnderLoad(t *testing.T) {
	src, _ := npmServers(t)
	h := mcpHarness(t, nil)
	h.installMCP("everything", "1.0.0", src, nil, everythingJS, "stdio")
	h.start()
	h.waitServing("everything.echo", "1.0.0", 30*time.Second)
	oldPID := activePID(t, h.status("everything"))

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls, fails atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				calls.Add(1)
				if _, err := h.call("everything.echo", `{"message":"load"}`); err != nil {
					fails.Add(1)
					t.Errorf("call failed during the swap: %v", err)
				}
			}
		}()
	}
	h.installMCP("everything", "2.0.0", src, nil, everythingJS, "stdio")
	h.waitServing("everything.echo", "2.0.0", 60*time.Second)
	// Keep calling through the drain of 1.0.0.
	if !testenv.WaitFor(10*time.Second, func() bool { return !testenv.Alive(oldPID) }) {
		t.Errorf("the old server %d is still alive after the grace period", oldPID)
	}
	cancel()
	wg.Wait()
	if fails.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d of %d calls failed", fails.Load(), calls.Load())
	}
	t.Logf("%d calls, 0 failed, across the swap", calls.Load())
}

// TestMCPCrashRestarts kills a serving npm server: its tools go
// unavailable, it is restarted with backoff, and it serves again.
func TestMCPCrashRestarts(t *testing.T) {
	src, _ := npmServers(t)
	h := mcpHarness(t, nil)
	h.installMCP("memory", "1.0.0", src, nil, memoryJS)
	h.start()
	pid := activePID(t, h.status("memory"))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		_, err := h.call("memory.read_graph", `{}`)
		return err == nil
	}) {
		t.Fatalf("memory never served again: %+v", h.status("memory"))
	}
	t.Logf("serving again %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	st := h.status("memory")
	v, _ := versionState(st, "1.0.0")
	if v.PID == pid || v.Restarts < 1 || v.State != StateActive {
		t.Fatalf("after the crash: %+v", v)
	}
	var crashed, restarted bool
	for _, e := range h.events() {
		crashed = crashed || (e.State == StateCrashed && e.PID == pid && strings.Contains(e.Reason, "signal: killed"))
		restarted = restarted || (e.State == StateActive && e.Restart && e.PID == v.PID)
	}
	if !crashed || !restarted {
		t.Fatalf("events (crash with its signal %v, restart %v): %+v", crashed, restarted, h.events())
	}
}

// TestMCPDigestMismatchIsIncomplete: files that no longer match the
// manifest's folder digest are a copy in progress, never run.
func TestMCPDigestMismatchIsIncomplete(t *testing.T) {
	npmServers(t)
	h := mcpHarness(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "server.js"), []byte("// v1\n"), 0o644)
	vdir := h.installMCP("half", "1.0.0", dir, nil, "server.js")
	// The files change after the manifest was written: a copy in progress.
	if err := os.WriteFile(filepath.Join(vdir, "server.js"), []byte("// v2, half written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	if !testenv.WaitFor(10*time.Second, func() bool {
		v, _ := versionState(h.status("half"), "1.0.0")
		return v.State == StateIncomplete
	}) {
		t.Fatalf("a folder that does not match its digest: %+v", h.status("half"))
	}
}

// tinyServer is a minimal stdio MCP server in node with one tool, "ping";
// with exitAfterMS > 0 it exits that long after its first tools/list (a
// server that crashes in a loop).
func tinyServer(exitAfterMS int) string {
	return `const exitAfter = ` + strconv.Itoa(exitAfterMS) + `;
let buf = '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.id === undefined) continue;
    if (m.method === 'initialize') send({jsonrpc: '2.0', id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'tiny', version: '1'}}});
    else if (m.method === 'tools/list') {
      send({jsonrpc: '2.0', id: m.id, result: {tools: [{name: 'ping', description: 'Answers pong.', inputSchema: {type: 'object'}}]}});
      if (exitAfter > 0) setTimeout(() => process.exit(7), exitAfter);
    } else if (m.method === 'tools/call') send({jsonrpc: '2.0', id: m.id, result: {content: [{type: 'text', text: 'pong'}]}});
    else send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no such method'}});
  }
});
process.stdin.on('end', () => process.exit(0));
`
}

// TestMCPCrashLoopBacksOff: a server that dies shortly after each start is
// restarted with growing delays, and its neighbour serves every call
// meanwhile.
func TestMCPCrashLoopBacksOff(t *testing.T) {
	h := mcpHarness(t, func(c *Config) {
		c.RestartBackoff, c.RestartBackoffMax = 100*time.Millisecond, 800*time.Millisecond
	})
	h.installScript("flaky", "1.0.0", tinyServer(200), nil)
	h.installScript("steady", "1.0.0", tinyServer(0), nil)
	h.start()
	deadline := time.Now().Add(60 * time.Second)
	calls := 0
	for {
		if _, err := h.call("steady.ping", `{}`); err != nil {
			t.Fatalf("steady.ping failed while flaky crashed in a loop: %v", err)
		}
		calls++
		if v, _ := versionState(h.status("flaky"), "1.0.0"); v.Restarts >= 5 { // counted at each crash: 5 crashes, 4 restarts
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flaky did not crash 5 times: %+v", h.status("flaky"))
		}
	}
	// The delays between a crash and the next start grow (100, 200, 400,
	// 800 ms): the fourth is longer than the first.
	var crashes, starts []time.Time
	for _, e := range h.events() {
		if e.Skill != "flaky" {
			continue
		}
		switch {
		case e.State == StateCrashed:
			crashes = append(crashes, e.Time)
		case e.State == StateStarting && e.From == "" && len(crashes) > len(starts):
			starts = append(starts, e.Time)
		}
	}
	if len(starts) < 4 {
		t.Fatalf("%d restarts seen in the events: %+v", len(starts), h.events())
	}
	first, fourth := starts[0].Sub(crashes[0]), starts[3].Sub(crashes[3])
	if fourth <= first {
		t.Errorf("no backoff: the first restart came %v after its crash, the fourth %v", first, fourth)
	}
	t.Logf("steady served %d calls, none failed; restart delays %v then %v", calls, first, fourth)
}
