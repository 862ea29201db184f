package mcprt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
)

// helperEnv selects a helper mode: the test binary, run by the runtime as
// its "interpreter", plays an MCP server (good or bad) instead of testing.
const helperEnv = "MCPRT_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// runHelper is a small MCP server over stdio, written against the wire
// format rather than an SDK so that it can misbehave in every way the
// runtime must survive. Modes:
//
//	good       echo, add, sleep, fail, crash, big, env, add-tool, spawn
//	noisy      good, with a junk line on stdout before every message
//	mute       reads stdin, never answers
//	junk       writes banners to stdout, never answers
//	deaf       good until its first tools/list is answered, then never reads stdin again
//	crash      exits 3 at once, after a line on stderr
//	badschema  one good tool among tools the registry refuses
func runHelper(mode string) int {
	fmt.Fprintln(os.Stderr, "helper starting in mode", mode)
	switch mode {
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: cannot start")
		return 3
	case "mute":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "junk":
		for i := 0; i < 3; i++ {
			fmt.Println("Welcome to the helper server! (not JSON-RPC)")
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	h := &helperServer{mode: mode, extra: map[string]bool{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var wg sync.WaitGroup
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue // a notification, or nothing we know
		}
		if mode == "deaf" && m.Method == "tools/list" {
			h.handle(m.ID, m.Method, m.Params)
			select {} // stdin fills up; only a kill ends this
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.handle(m.ID, m.Method, m.Params)
		}()
	}
	wg.Wait()
	return 0
}

type helperServer struct {
	mode string

	mu    sync.Mutex // guards stdout and extra
	extra map[string]bool
}

func (h *helperServer) write(v any) {
	b, _ := json.Marshal(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mode == "noisy" {
		os.Stdout.WriteString("debug: about to answer\n")
	}
	os.Stdout.Write(append(b, '\n'))
}

func (h *helperServer) reply(id json.RawMessage, result any) {
	h.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (h *helperServer) fail(id json.RawMessage, code int, msg string) {
	h.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
}

var objSchema = map[string]any{"type": "object"}

func tool(name, desc string, schema any) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": schema}
}

func (h *helperServer) tools() []any {
	if h.mode == "badschema" {
		return []any{
			tool("ok", "a good tool", objSchema),
			tool("getThing", "a camelCase name, mapped", objSchema),
			tool("bad-schema", "its input is not an object", map[string]any{"type": "string"}),
			tool("Bad Name!", "a name nothing maps", objSchema),
			tool("no-desc", "", objSchema),
			tool("get_thing", "collides with getThing once mapped", objSchema),
			map[string]any{"name": "task-only", "description": "needs MCP tasks", "inputSchema": objSchema, "execution": map[string]any{"taskSupport": "required"}},
			tool("broken-ref", "a $ref to a file", map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "file:///etc/passwd"}}}),
		}
	}
	ts := []any{
		tool("echo", "echoes its message", map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}),
		tool("add", "adds a and b", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}}),
		tool("sleep", "sleeps ms milliseconds", objSchema),
		tool("fail", "always fails", objSchema),
		tool("crash", "exits the process", objSchema),
		tool("big", "returns n bytes of text", objSchema),
		tool("env", "returns its environment", objSchema),
		tool("add-tool", "adds the tool extra and says so", objSchema),
		tool("spawn", "starts a child process and returns its pid", objSchema),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.extra["extra"] {
		ts = append(ts, tool("extra", "added at run time", objSchema))
	}
	return ts
}

func (h *helperServer) handle(id json.RawMessage, method string, params json.RawMessage) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		h.reply(id, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "helper", "version": "1"},
		})
	case "ping":
		h.reply(id, map[string]any{})
	case "tools/list":
		h.reply(id, map[string]any{"tools": h.tools()})
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		_ = json.Unmarshal(params, &p)
		h.call(id, p.Name, p.Arguments)
	default:
		h.fail(id, -32601, "method not found: "+method)
	}
}

func (h *helperServer) call(id json.RawMessage, name string, args map[string]any) {
	num := func(k string) float64 { f, _ := args[k].(float64); return f }
	switch name {
	case "echo":
		msg, _ := args["message"].(string)
		h.reply(id, text(msg))
	case "add":
		h.reply(id, map[string]any{"content": []any{}, "structuredContent": map[string]any{"sum": num("a") + num("b")}})
	case "sleep":
		time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		h.reply(id, text("slept"))
	case "fail":
		h.reply(id, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no, and here is why"}}})
	case "crash":
		fmt.Fprintln(os.Stderr, "crashing on purpose")
		os.Exit(4)
	case "big":
		h.reply(id, text(strings.Repeat("x", int(num("n")))))
	case "env":
		env := os.Environ()
		sort.Strings(env)
		h.reply(id, map[string]any{"content": []any{}, "structuredContent": map[string]any{"env": env}})
	case "add-tool":
		h.mu.Lock()
		h.extra["extra"] = true
		h.mu.Unlock()
		h.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		h.reply(id, text("added"))
	case "spawn":
		child := exec.Command("/bin/sleep", "300")
		if err := child.Start(); err != nil {
			h.fail(id, -32603, err.Error())
			return
		}
		h.reply(id, map[string]any{"content": []any{}, "structuredContent": map[string]any{"pid": child.Process.Pid}})
	case "ok", "getThing", "extra":
		h.reply(id, text("called "+name))
	default:
		h.fail(id, -32602, "unknown tool "+name)
	}
}

// testLogger logs into a buffer that is printed if the test fails.
func testLogger(t *testing.T) (hclog.Logger, *testenv.SyncBuffer) {
	t.Helper()
	buf := &testenv.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runtime log:\n%s", buf)
		}
	})
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug}), buf
}

// helperConfig is a version folder whose "interpreter" is this test binary
// in the given mode.
func helperConfig(t *testing.T, mode string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/README", []byte("helper server, mode "+mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest, err := FolderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger(t)
	return Config{
		Skill: "helper", Version: "1.0.0", Dir: dir,
		Spec:         Spec{Command: "gotest", SHA256: digest},
		Env:          map[string]string{helperEnv: mode},
		Interpreters: Interpreters{"gotest": exe},
		RunDir:       t.TempDir(),
		Logger:       log,
		StartTimeout: 20 * time.Second,
	}
}
