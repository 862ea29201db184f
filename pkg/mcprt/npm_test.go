package mcprt

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// npmServers installs the pinned public servers once per test binary
// (testenv.NPMServers) and returns their folder, its digest and the node to
// allow; it skips the test when node or npm is missing.
func npmServers(t testing.TB) (dir, digest, node string) {
	t.Helper()
	dir, node = testenv.NPMServers(t)
	npmDigest.once.Do(func() { npmDigest.sum, npmDigest.err = FolderDigest(dir) })
	if npmDigest.err != nil {
		t.Fatal(npmDigest.err)
	}
	return dir, npmDigest.sum, node
}

var npmDigest struct {
	once sync.Once
	sum  string
	err  error
}

// npmConfig is a skill version serving one of the installed servers,
// run by the operator-allowed node.
func npmConfig(t testing.TB, skill string, args ...string) Config {
	dir, digest, node := npmServers(t)
	return Config{
		Skill: skill, Version: "2026.8.31", Dir: dir,
		Spec:         Spec{Command: "node", Args: args, SHA256: digest},
		Interpreters: Interpreters{"node": node},
		RunDir:       t.TempDir(),
		StartTimeout: 60 * time.Second,
	}
}

const (
	everythingJS = testenv.EverythingJS
	memoryJS     = testenv.MemoryJS
)

func TestServerEverything(t *testing.T) {
	t.Setenv("MCPRT_CANARY_SECRET", "must-not-leak")
	cfg := npmConfig(t, "everything", everythingJS, "stdio")
	cfg.Logger, _ = testLogger(t)
	changed := make(chan struct{}, 1)
	cfg.OnToolsChanged = func(*Instance) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inst := launch(t, cfg)
	names := toolNames(inst.Tools())
	for _, want := range []string{"echo", "get-sum", "get-env", "get-structured-content", "get-tiny-image"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not served; tools: %v, refused: %v", want, names, inst.Refused())
		}
	}
	if got := invoke(t, inst, "echo", `{"message":"hi"}`); got != `"Echo: hi"` {
		t.Errorf("echo: %s", got)
	}
	if got := invoke(t, inst, "get-sum", `{"a":2,"b":3}`); !strings.Contains(got, "5") {
		t.Errorf("get-sum: %s", got)
	}
	var weather map[string]any
	if err := json.Unmarshal([]byte(invoke(t, inst, "get-structured-content", `{"location":"New York"}`)), &weather); err != nil || weather["temperature"] == nil {
		t.Errorf("get-structured-content did not return its structured content: %v %v", weather, err)
	}
	var image struct{ Content []map[string]any }
	if err := json.Unmarshal([]byte(invoke(t, inst, "get-tiny-image", `{}`)), &image); err != nil || !slices.ContainsFunc(image.Content, func(c map[string]any) bool { return c["type"] == "image" }) {
		t.Errorf("get-tiny-image did not keep its image block: %v", err)
	}
	// Nothing of the host's environment reaches the server.
	env := invoke(t, inst, "get-env", `{}`)
	if strings.Contains(env, "MCPRT_CANARY_SECRET") || !strings.Contains(env, cfg.RunDir) {
		t.Errorf("get-env shows the host's environment or not the private one: %s", env)
	}
	_, err := inst.Invoke(context.Background(), "get-sum", []byte(`{"a":"two"}`), 1<<20)
	wantCode(t, err, registry.CodeToolError)

	// The server registers more tools once initialized and says so.
	select {
	case <-changed:
		if _, err := inst.Describe(context.Background()); err != nil {
			t.Errorf("describe after list_changed: %v", err)
		}
		// Its task-only tool is refused, with the reason.
		if !slices.ContainsFunc(inst.Refused(), func(r RefusedTool) bool {
			return r.Name == "simulate-research-query" && strings.Contains(r.Reason, "MCP task")
		}) {
			t.Errorf("simulate-research-query (taskSupport required) is not refused: %v", inst.Refused())
		}
	case <-time.After(10 * time.Second):
		t.Error("server-everything sent no notifications/tools/list_changed")
	}
}

func TestServerMemory(t *testing.T) {
	cfg := npmConfig(t, "memory", memoryJS)
	cfg.Logger, _ = testLogger(t)
	cfg.Env = map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}
	inst := launch(t, cfg)
	invoke(t, inst, "create_entities", `{"entities":[{"name":"skillhost","entityType":"project","observations":["hosts skills"]}]}`)
	invoke(t, inst, "create_relations", `{"relations":[{"from":"skillhost","to":"skillhost","relationType":"hosts itself"}]}`)
	graph := invoke(t, inst, "read_graph", `{}`)
	if !strings.Contains(graph, "hosts skills") || !strings.Contains(graph, "hosts itself") {
		t.Errorf("read_graph: %s", graph)
	}
	if got := invoke(t, inst, "search_nodes", `{"query":"skillhost"}`); !strings.Contains(got, "skillhost") {
		t.Errorf("search_nodes: %s", got)
	}
}

func TestServerCrashRecovery(t *testing.T) {
	cfg := npmConfig(t, "memory", memoryJS)
	cfg.Logger, _ = testLogger(t)
	cfg.Env = map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}
	// The restart reuses the crashed instance's copy: checked, not copied.
	copies, err := NewCopies(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer copies.Close()
	cfg.Copies = copies
	exits := make(chan *Instance, 1)
	cfg.OnExit = func(i *Instance) { exits <- i }
	inst := launch(t, cfg)
	invoke(t, inst, "read_graph", `{}`)
	if err := syscall.Kill(inst.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, exits, "OnExit after the server was killed")
	_, err = inst.Invoke(context.Background(), "read_graph", []byte(`{}`), 1<<20)
	if re := wantCode(t, err, registry.CodeSkillUnavailable); !re.Retryable {
		t.Error("not retryable")
	}
	inst.Kill() // what the supervisor does with a crashed instance
	start := time.Now()
	again := launch(t, cfg)
	t.Logf("restarted in %s", time.Since(start))
	if got := invoke(t, again, "read_graph", `{}`); !strings.Contains(got, "entities") {
		t.Errorf("read_graph after restart: %s", got)
	}
	again.Close()
}

// scripts/install-mcp-skill.sh writes a version folder whose manifest the
// scan finds valid (its digest is the folder's) and the runtime launches as
// it is.
func TestInstallMCPSkillScript(t *testing.T) {
	_, _, node := npmServers(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed")
	}
	tree := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(testenv.ModuleRoot(), "scripts", "install-mcp-skill.sh"),
		"@modelcontextprotocol/server-memory@2026.8.31", "--name", "memory", "--skills", tree,
		"--tag", "memory", "--env", "MEMORY_FILE_PATH=${HOME}/memory.jsonl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install-mcp-skill.sh: %v\n%s", err, out)
	}
	dir := filepath.Join(tree, "memory", "2026.8.31")
	v := manifest.Load(dir, manifest.Options{StrictModes: true})
	if v.Status != manifest.StatusValid {
		t.Fatalf("the installed version is %s: %v", v.Status, v.Problems)
	}
	m := v.Manifest
	if m.RuntimeName() != manifest.RuntimeMCP || m.Command != "node" || m.Env["MEMORY_FILE_PATH"] != "${HOME}/memory.jsonl" {
		t.Fatalf("manifest: %+v", m)
	}
	log, _ := testLogger(t)
	inst := launch(t, Config{
		Skill: "memory", Version: "2026.8.31", Dir: dir, Spec: Spec{Command: m.Command, Args: m.Args, SHA256: m.DigestHex()}, Env: m.Env,
		Interpreters: Interpreters{"node": node}, RunDir: t.TempDir(), Logger: log, StartTimeout: 60 * time.Second,
	})
	if got := invoke(t, inst, "read_graph", `{}`); !strings.Contains(got, "entities") {
		t.Errorf("read_graph: %s", got)
	}
}
