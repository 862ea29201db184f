package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/loader"
)

var testSkillBin string

// TestMain builds the test skill once. It deliberately does not call
// proc.MaybeRunReaper: TestImportHasNoSideEffects checks that nothing this
// binary links acts on the watchdog's marker by itself.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// Reached only if no package's init took the process over.
		fmt.Println(helperSaid)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "host-test-")
	if err != nil {
		panic(err)
	}
	code := 1
	if testSkillBin, err = testenv.Build(dir, "./internal/testskill"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	http.DefaultClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	helperEnv  = "HOST_TEST_HELPER"
	helperSaid = "main ran"
)

// TestImportHasNoSideEffects starts this test binary, which links every
// package of the daemon, marked as the skills' watchdog. Before pkg/proc
// had MaybeRunReaper, an init in the loader turned any such binary into the
// watchdog, which waits on its stdin and exits quietly: the binary's own
// main never ran.
func TestImportHasNoSideEffects(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SKILLHOST_SKILL_REAPER=1", helperEnv+"=1")
	cmd.Stdin = strings.NewReader("bye\n") // a watchdog would exit quietly on it
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != helperSaid {
		t.Fatalf("the binary's main did not run (err %v): %q", err, out)
	}
}

func TestNewReportsEveryProblemAtOnce(t *testing.T) {
	_, err := New(Config{Tokens: api.Tokens{Admin: "same", Invoke: "same"}, Console: true})
	if err == nil {
		t.Fatal("New accepted a config without skills")
	}
	for _, want := range []string{"Config.Skills is required", "tokens are the same", "faces need the HTTP API"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// failingFace fails its mount, after the listener and the loader exist.
type failingFace struct{}

func (failingFace) Name() string       { return "broken" }
func (failingFace) Mount(*Mount) error { return errors.New("no luck") }

// TestFailedNewLeavesNothing checks that New never returns a half-built
// host: what it made before a face failed (the listener, the loader's run
// folder) is gone.
func TestFailedNewLeavesNothing(t *testing.T) {
	runDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h, err := New(Config{Skills: t.TempDir(), Listen: addr, RunDir: runDir, MCP: &MCPConfig{}, Faces: []Face{failingFace{}}})
	if h != nil || err == nil || !strings.Contains(err.Error(), "broken: no luck") {
		t.Fatalf("New = %v, %v; want nil and the face's error", h, err)
	}
	if entries, _ := os.ReadDir(runDir); len(entries) != 0 {
		t.Errorf("the run folder keeps %v", entries)
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the listener was not closed: %v", err)
	}
	again.Close()
}

// recordingFace is a face that records what the host calls.
type recordingFace struct {
	mu    sync.Mutex // guards calls
	calls []string
}

func (f *recordingFace) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *recordingFace) Name() string { return "recorder" }
func (f *recordingFace) Mount(m *Mount) error {
	f.record("mount")
	m.Handle("GET /v1/recorder", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "recorded")
	}))
	return nil
}
func (f *recordingFace) Start() error { f.record("start"); return nil }
func (f *recordingFace) Drain()       { f.record("drain") }
func (f *recordingFace) Close() error { f.record("close"); return nil }

func (f *recordingFace) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostServesAndStops runs a whole daemon in the test's process over a
// real skill: the API, the faces, the metrics, then a stop called twice.
// The host does not own the process, so the test binary must come out of
// it unchanged: no watchdog child, not a child subreaper (which would also
// mean no orphan sweeper ran: only the sweeper's constructor sets it),
// still dumpable.
func TestHostServesAndStops(t *testing.T) {
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(t.TempDir(), "addr")
	face := &recordingFace{}
	h, err := New(Config{
		Skills: root, Listen: "127.0.0.1:0", AddrFile: addrFile, StateDir: t.TempDir(), Grace: 5 * time.Second,
		MCP: &MCPConfig{}, Agent: &AgentConfig{}, Console: true, Faces: []Face{face},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the first scan never settled")
	}
	base := "http://" + h.Addr().String()
	if b, err := os.ReadFile(addrFile); err != nil || strings.TrimSpace(string(b)) != h.Addr().String() {
		t.Errorf("address file: %q, %v", b, err)
	}
	for path, want := range map[string]string{
		"/readyz":                    "",
		"/v1/tools/alpha.echo":       "alpha.echo",
		"/v1/recorder":               "recorded",
		"/ui/":                       "<html",
		"/metrics":                   "skillhost_agent_runs_total",
		"/v1/skills/alpha":           `"active":"1.0.0"`,
		"/v1/openai/tools?tags=test": "alpha__echo",
	} {
		if code, body := get(t, base+path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.200s", path, code, body)
		}
	}
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Error("/mcp is not mounted")
	}

	if kids := testenv.CheckProcessUntouched(t); len(kids) == 0 {
		t.Error("the skill is not a child of the test process")
	}

	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
	}
	wg.Wait()
	if got, want := face.seen(), []string{"mount", "start", "drain", "close"}; !slices.Equal(got, want) {
		t.Errorf("the face saw %v, want %v", got, want)
	}
	if _, err := os.Stat(addrFile); !os.IsNotExist(err) {
		t.Errorf("the address file outlived the host: %v", err)
	}
	if left := testenv.Descendants(os.Getpid()); len(left) != 0 {
		t.Errorf("processes left after Shutdown: %v", left)
	}
	if err := h.Start(); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Shutdown = %v, want ErrStopped", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the API still answers after Shutdown")
	}
}

// TestShutdownIsForcedWhenItsContextEnds holds a tool call open with a
// grace of a minute: a first Shutdown waits for it; a second one whose
// context has ended forces the stop for both, and the caller still gets
// an answer (the skill was stopped under it) rather than a cut connection.
func TestShutdownIsForcedWhenItsContextEnds(t *testing.T) {
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Skills: root, Listen: "127.0.0.1:0", Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	<-h.Ready()
	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post("http://"+h.Addr().String()+"/v1/tools/alpha.sleep/invoke", "application/json",
			strings.NewReader(`{"arguments":{"ms":60000}}`))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- answer{code: resp.StatusCode, body: string(b)}
	}()
	if !testenv.WaitFor(10*time.Second, func() bool {
		st, _ := h.ld.Skill("alpha")
		return len(st.Versions) > 0 && st.Versions[0].InFlight > 0
	}) {
		t.Fatal("the call never reached the skill")
	}
	first := make(chan error, 1)
	go func() { first <- h.Shutdown(context.Background()) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	if err := h.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("forced Shutdown = %v, want context.Canceled", err)
	}
	if err := <-first; err != nil {
		t.Errorf("the first Shutdown = %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the forced stop took %v", took)
	}
	if a := <-answered; a.err != nil || a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "skill_unavailable") {
		t.Errorf("the call in flight got %d %s (%v), want a 503 skill_unavailable", a.code, a.body, a.err)
	}
}

// TestRunStopsWhenItsContextEnds is Run's whole life over an empty tree.
func TestRunStopsWhenItsContextEnds(t *testing.T) {
	h, err := New(Config{Skills: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	<-h.Ready()
	if code, _ := get(t, "http://"+h.Addr().String()+"/readyz"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestRunReportsAFailedFirstScan: a tree that is not there ends Run with
// the loader's error.
func TestRunReportsAFailedFirstScan(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	h, err := New(Config{Skills: missing})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(context.Background()); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Run = %v, want the missing tree named", err)
	}
}

// sharedState is a StateStore of the test's own, as a fleet's would be.
type sharedState struct {
	mu        sync.Mutex // guards decisions
	decisions map[string]loader.Decision
}

func (s *sharedState) Get(skill string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.decisions[skill]
	return d.Disabled, d.Pin
}

func (s *sharedState) Update(skill string, fn func(*loader.Decision)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.decisions[skill]
	fn(&d)
	s.decisions[skill] = d
	return nil
}

// TestStateStoreIsTheOperatorsWord runs a host over a store of the test's
// own: a skill it says is disabled does not serve, and enabling it over
// the API goes through the store.
func TestStateStoreIsTheOperatorsWord(t *testing.T) {
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	state := &sharedState{decisions: map[string]loader.Decision{"alpha": {Disabled: true}}}
	h, err := New(Config{Skills: root, Listen: "127.0.0.1:0", State: state, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	<-h.Ready()
	base := "http://" + h.Addr().String()
	if code, body := get(t, base+"/v1/tools/alpha.echo"); code != http.StatusNotFound {
		t.Fatalf("a skill the store disables is served: %d %s", code, body)
	}
	resp, err := http.Post(base+"/v1/skills/alpha/enable", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("enable: %d", resp.StatusCode)
	}
	if disabled, _ := state.Get("alpha"); disabled {
		t.Error("enable did not reach the store")
	}
	if code, body := get(t, base+"/v1/tools/alpha.echo"); code != 200 {
		t.Errorf("alpha after enable: %d %s", code, body)
	}
}

// TestHostServesAnMCPServer: a dropped-in npm MCP server serves through the
// API once its interpreter is allowed, /v1/skills shows its runtime, and a
// version naming an interpreter the operator did not allow fails alone,
// with the reason.
func TestHostServesAnMCPServer(t *testing.T) {
	src, node := testenv.NPMServers(t)
	root := t.TempDir()
	if _, err := testenv.InstallMCP(root, "memory", "1.0.0", src, nil, testenv.MemoryJS); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.InstallMCP(root, "py", "1.0.0", t.TempDir(), func(m map[string]any) { m["command"] = "python3" }, "server.py"); err != nil {
		t.Fatal(err)
	}
	interp := Interpreters{}
	if err := interp.Set("node=" + node); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{
		Skills: root, Listen: "127.0.0.1:0", StateDir: t.TempDir(), StartTimeout: time.Minute, Interpreters: interp,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	select {
	case <-h.Ready():
	case <-time.After(90 * time.Second):
		t.Fatal("the first scan never settled")
	}
	base := "http://" + h.Addr().String()
	resp, err := http.Post(base+"/v1/tools/memory.read_graph/invoke", "application/json", strings.NewReader(`{"arguments":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"entities"`) {
		t.Errorf("invoke memory.read_graph: %d %.300s", resp.StatusCode, body)
	}
	for path, want := range map[string]string{
		"/v1/skills/memory": `"runtime":"mcp"`,
		"/v1/skills/py":     `is not an interpreter the operator allows (allowed: node)`,
	} {
		if code, body := get(t, base+path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.400s", path, code, body)
		}
	}
}

// TestFacesThatCannotKeepTheirFilesStepAside: when the state folder will not
// take the runs' and teams' logs (here their folders' names are taken by
// files), the host still starts and serves, and those routes say why.
func TestFacesThatCannotKeepTheirFilesStepAside(t *testing.T) {
	state := t.TempDir()
	for _, name := range []string{"runs", "teams"} {
		if err := os.WriteFile(filepath.Join(state, name), []byte("not a folder"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Config{Skills: t.TempDir(), Listen: "127.0.0.1:0", StateDir: state, Runs: &RunsConfig{}, Teams: &TeamsConfig{}})
	if err != nil {
		t.Fatalf("New with an unusable runs folder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	<-h.Ready()
	base := "http://" + h.Addr().String()
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
	for path, code := range map[string]string{"/v1/runs": "runs_closed", "/v1/flows": "runs_closed", "/v1/runs/x/events": "runs_closed", "/v1/teams": "teams_closed"} {
		status, body := get(t, base+path)
		if status != 503 || !strings.Contains(body, `"code":"`+code+`"`) || !strings.Contains(body, "unavailable on this host") {
			t.Errorf("GET %s = %d %s, want 503 %s naming the reason", path, status, body, code)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
}
