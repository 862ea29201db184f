package mcprt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/registry"
)

// await waits for a signal the runtime sends, up to 10 s.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		var zero T
		return zero
	}
}

func launch(t *testing.T, cfg Config) *Instance {
	t.Helper()
	inst, err := Launch(context.Background(), cfg)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	t.Cleanup(inst.Close)
	return inst
}

func toolNames(specs []registry.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func invoke(t *testing.T, inst *Instance, tool, args string) string {
	t.Helper()
	out, err := inst.Invoke(context.Background(), tool, []byte(args), 4<<20)
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return string(out)
}

func wantCode(t *testing.T, err error, code registry.Code) *registry.Error {
	t.Helper()
	var re *registry.Error
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("want a %s error, got %v", code, err)
	}
	return re
}

// emptyDir fails the test unless dir holds nothing: no run folder is left.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("%s still holds %v", dir, ents[0].Name())
	}
}

// reaped fails unless the process pid is gone.
func reaped(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d is still there (kill 0: %v)", pid, err)
	}
}

func TestServesTools(t *testing.T) {
	t.Setenv("MCPRT_CANARY_SECRET", "must-not-leak")
	cfg := helperConfig(t, "good")
	inst := launch(t, cfg)
	if got, want := toolNames(inst.Tools()), []string{"add", "add-tool", "big", "crash", "echo", "env", "fail", "sleep", "spawn"}; !slices.Equal(got, want) {
		t.Fatalf("tools: got %v, want %v", got, want)
	}
	if got := invoke(t, inst, "echo", `{"message":"hi"}`); got != `"hi"` {
		t.Errorf("echo: got %s", got)
	}
	if got := invoke(t, inst, "add", `{"a":2,"b":3}`); got != `{"sum":5}` {
		t.Errorf("add: got %s", got)
	}
	_, err := inst.Invoke(context.Background(), "fail", nil, 1<<20)
	if re := wantCode(t, err, registry.CodeToolError); !strings.Contains(re.Message, "no, and here is why") {
		t.Errorf("fail: the message lost the server's reason: %v", re)
	}
	if err := inst.Ping(context.Background()); err != nil {
		t.Errorf("ping: %v", err)
	}

	// The environment: the manifest's, PATH and HOME in the run folder.
	var env struct{ Env []string }
	if err := json.Unmarshal([]byte(invoke(t, inst, "env", `{}`)), &env); err != nil {
		t.Fatal(err)
	}
	if len(env.Env) != 3 || !strings.HasPrefix(env.Env[0], "HOME="+cfg.RunDir) || env.Env[1] != helperEnv+"=good" || !strings.HasPrefix(env.Env[2], "PATH="+cfg.RunDir) {
		t.Errorf("the server's environment is %q; want only HOME and PATH in %s and %s", env.Env, cfg.RunDir, helperEnv)
	}

	pid := inst.PID()
	inst.Close()
	reaped(t, pid)
	emptyDir(t, cfg.RunDir)
	_, err = inst.Invoke(context.Background(), "echo", []byte(`{}`), 1<<20)
	if re := wantCode(t, err, registry.CodeSkillUnavailable); !re.Retryable {
		t.Errorf("a call after close should be retryable: %v", re)
	}
}

// withServerFile makes the helper a file of the version folder,
// bin/server, rather than an allowed interpreter.
func withServerFile(t *testing.T, cfg Config) Config {
	t.Helper()
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "bin", "server"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.SHA256, _ = FolderDigest(cfg.Dir)
	cfg.Spec.Command, cfg.Interpreters = "./bin/server", nil
	return cfg
}

func TestFileCommandRunsFromTheCopy(t *testing.T) {
	cfg := withServerFile(t, helperConfig(t, "good"))
	var path string
	cfg.ConfigureCmd = func(c *exec.Cmd) { path = c.Path }
	inst := launch(t, cfg)
	if !strings.HasPrefix(path, cfg.RunDir) {
		t.Errorf("ran %s, not the private copy under %s", path, cfg.RunDir)
	}
	// An operator may overwrite the original while the copy serves.
	if err := os.WriteFile(filepath.Join(cfg.Dir, "bin", "server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := invoke(t, inst, "echo", `{"message":"still here"}`); got != `"still here"` {
		t.Errorf("echo: %s", got)
	}
}

func TestSkillUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a server as another user needs root")
	}
	cfg := withServerFile(t, helperConfig(t, "good"))
	cfg.User = &User{UID: 65534, GID: 65534} // nobody
	// The account must be able to reach the run folder.
	for d := cfg.RunDir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	inst := launch(t, cfg)
	if got := invoke(t, inst, "echo", `{"message":"as nobody"}`); got != `"as nobody"` {
		t.Errorf("echo: %s", got)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(inst.PID()), "status"))
	if err != nil {
		t.Fatal(err)
	}
	var uid, groups string
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch v = strings.Join(strings.Fields(v), " "); k {
		case "Uid":
			uid = v
		case "Groups":
			groups = v
		}
	}
	if uid != "65534 65534 65534 65534" || groups != "" {
		t.Errorf("the server does not run as nobody without groups:\n%s", status)
	}
	inst.Close()
	emptyDir(t, cfg.RunDir)
}

func TestDigestMismatchRunsNothing(t *testing.T) {
	cfg := helperConfig(t, "good")
	if err := os.WriteFile(filepath.Join(cfg.Dir, "README"), []byte("changed after the manifest was written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	started := false
	cfg.ConfigureCmd = func(*exec.Cmd) { started = true }
	_, err := Launch(context.Background(), cfg)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("want ErrDigestMismatch, got %v", err)
	}
	if started {
		t.Error("a process was started for a folder that does not verify")
	}
	emptyDir(t, cfg.RunDir)
}

func TestListChangedAndDescribe(t *testing.T) {
	cfg := helperConfig(t, "good")
	changed := make(chan struct{}, 1)
	cfg.OnToolsChanged = func(*Instance) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inst := launch(t, cfg)
	if _, err := inst.Invoke(context.Background(), "extra", []byte(`{}`), 1<<20); registry.CodeOf(err) != registry.CodeUnknownTool {
		t.Fatalf("extra before it exists: want unknown_tool, got %v", err)
	}
	invoke(t, inst, "add-tool", `{}`)
	await(t, changed, "list_changed callback")
	specs, err := inst.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(specs), "extra") {
		t.Fatalf("extra is not described after list_changed: %v", toolNames(specs))
	}
	if got := invoke(t, inst, "extra", `{}`); got != `"called extra"` {
		t.Errorf("extra: %s", got)
	}
}

func TestDeadlineEndsTheCall(t *testing.T) {
	inst := launch(t, helperConfig(t, "good"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := inst.Invoke(ctx, "sleep", []byte(`{"ms":10000}`), 1<<20)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the deadline, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call outlived its deadline by %s", d)
	}
	if got := invoke(t, inst, "echo", `{"message":"after"}`); got != `"after"` {
		t.Errorf("echo after a timed-out call: %s", got)
	}
}

// A server that stops reading stdin fills the pipe: calls still end at
// their deadline, and Close still ends the server.
func TestServerThatStopsReading(t *testing.T) {
	cfg := helperConfig(t, "deaf")
	cfg.StopTimeout = 100 * time.Millisecond
	inst := launch(t, cfg)
	big := []byte(`{"message":"` + strings.Repeat("x", 1<<20) + `"}`) // far over a pipe's 64 KiB
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err := inst.Invoke(ctx, "echo", big, 1<<20)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d: want the deadline, got %v", i, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("call %d outlived its deadline by %s", i, d)
		}
		t.Logf("call %d took %s", i, time.Since(start))
	}
	pid := inst.PID()
	start := time.Now()
	inst.Close()
	t.Logf("close took %s", time.Since(start))
	reaped(t, pid)
}

func TestCrashDuringCallAndRestart(t *testing.T) {
	cfg := helperConfig(t, "good")
	exits := make(chan *Instance, 2)
	cfg.OnExit = func(i *Instance) { exits <- i }
	inst := launch(t, cfg)
	_, err := inst.Invoke(context.Background(), "crash", []byte(`{}`), 1<<20)
	if re := wantCode(t, err, registry.CodeSkillCrashed); !strings.Contains(re.Message, "crashing on purpose") {
		t.Errorf("the crash error does not carry the last stderr line: %v", re)
	}
	if got := await(t, exits, "OnExit after a crash"); got != inst {
		t.Error("OnExit named another instance")
	}
	<-inst.Exited()
	if err := inst.ExitErr(); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("ExitErr: %v", err)
	}
	_, err = inst.Invoke(context.Background(), "echo", []byte(`{}`), 1<<20)
	if re := wantCode(t, err, registry.CodeSkillUnavailable); !re.Retryable {
		t.Error("a call to a crashed server must be retryable")
	}
	// The supervisor's restart: a new launch of the same version.
	again := launch(t, cfg)
	if got := invoke(t, again, "echo", `{"message":"back"}`); got != `"back"` {
		t.Errorf("echo after restart: %s", got)
	}
	again.Close()
	select {
	case <-exits:
		t.Error("OnExit was called for a deliberate Close")
	default:
	}
}

func TestKilledServerIsSeen(t *testing.T) {
	cfg := helperConfig(t, "good")
	exits := make(chan struct{}, 1)
	cfg.OnExit = func(*Instance) { exits <- struct{}{} }
	inst := launch(t, cfg)
	if err := syscall.Kill(inst.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, exits, "OnExit after SIGKILL")
	_, err := inst.Invoke(context.Background(), "echo", []byte(`{}`), 1<<20)
	wantCode(t, err, registry.CodeSkillUnavailable)
}

// gone reports whether pid has exited: no such process, or a zombie that
// nobody has reaped yet (a container's init may never).
func gone(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z")
}

// The server's children die with it: at Close, and when it crashes.
func TestChildrenDieWithTheServer(t *testing.T) {
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("no /bin/sleep")
	}
	for _, how := range []string{"close", "crash"} {
		t.Run(how, func(t *testing.T) {
			inst := launch(t, helperConfig(t, "good"))
			var out struct{ PID int }
			if err := json.Unmarshal([]byte(invoke(t, inst, "spawn", `{}`)), &out); err != nil || out.PID == 0 {
				t.Fatalf("spawn: %v", err)
			}
			if gone(out.PID) {
				t.Fatal("the child is not running")
			}
			if how == "crash" {
				_, _ = inst.Invoke(context.Background(), "crash", []byte(`{}`), 1<<20)
				<-inst.Exited()
			} else {
				inst.Close()
			}
			if !testenv.WaitFor(5*time.Second, func() bool { return gone(out.PID) }) {
				t.Errorf("the server's child %d outlived it", out.PID)
			}
		})
	}
}

func TestNeverAnswersInitialize(t *testing.T) {
	cfg := helperConfig(t, "mute")
	cfg.StartTimeout = 500 * time.Millisecond
	var cmd *exec.Cmd
	cfg.ConfigureCmd = func(c *exec.Cmd) { cmd = c }
	_, err := Launch(context.Background(), cfg)
	if !errors.Is(err, ErrInitializeTimeout) {
		t.Fatalf("want ErrInitializeTimeout, got %v", err)
	}
	if !strings.Contains(err.Error(), "helper@1.0.0") {
		t.Errorf("the error does not name the skill: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Error("the process was not waited for")
	}
	emptyDir(t, cfg.RunDir)
}

func TestJunkOnStdout(t *testing.T) {
	t.Run("only junk", func(t *testing.T) {
		cfg := helperConfig(t, "junk")
		cfg.StartTimeout = 500 * time.Millisecond
		_, err := Launch(context.Background(), cfg)
		if !errors.Is(err, ErrStdoutJunk) || !errors.Is(err, ErrInitializeTimeout) {
			t.Fatalf("want ErrStdoutJunk and ErrInitializeTimeout, got %v", err)
		}
		if !strings.Contains(err.Error(), "Welcome to the helper server") {
			t.Errorf("the error does not show the junk: %v", err)
		}
		emptyDir(t, cfg.RunDir)
	})
	t.Run("junk between messages", func(t *testing.T) {
		cfg := helperConfig(t, "noisy")
		var log *testenv.SyncBuffer
		cfg.Logger, log = testLogger(t)
		inst := launch(t, cfg)
		for i := 0; i < 3; i++ {
			if got := invoke(t, inst, "echo", `{"message":"through the noise"}`); got != `"through the noise"` {
				t.Errorf("echo: %s", got)
			}
		}
		if inst.junk.Load() == 0 || !strings.Contains(log.String(), "debug: about to answer") {
			t.Errorf("the junk lines were not counted and logged (%d counted)", inst.junk.Load())
		}
	})
}

func TestCrashLoopAffectsNoOther(t *testing.T) {
	good := launch(t, helperConfig(t, "good"))
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Launch(context.Background(), helperConfig(t, "crash"))
		}()
	}
	for i := 0; i < 20; i++ {
		invoke(t, good, "echo", `{"message":"steady"}`)
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "boom: cannot start") || !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("want ErrExited with the stderr line and status, got %v", err)
		}
	}
}

func TestHugeResult(t *testing.T) {
	cfg := helperConfig(t, "good")
	cfg.MaxMessageBytes = 1 << 20
	inst := launch(t, cfg)
	_, err := inst.Invoke(context.Background(), "big", []byte(`{"n":8388608}`), 1<<20)
	if re := wantCode(t, err, registry.CodeResponseTooLarge); !strings.Contains(re.Message, "discarded unread") {
		t.Errorf("message: %v", re)
	}
	// Under the frame cap, over the call's own limit.
	_, err = inst.Invoke(context.Background(), "big", []byte(`{"n":600000}`), 100_000)
	wantCode(t, err, registry.CodeResponseTooLarge)
	// The session survived both.
	if got := invoke(t, inst, "echo", `{"message":"small"}`); got != `"small"` {
		t.Errorf("echo after a huge result: %s", got)
	}
}

func TestInvalidToolsAreRefusedOthersServe(t *testing.T) {
	inst := launch(t, helperConfig(t, "badschema"))
	if got, want := toolNames(inst.Tools()), []string{"get_thing", "ok"}; !slices.Equal(got, want) {
		t.Errorf("tools: got %v, want %v", got, want)
	}
	reasons := map[string]string{}
	for _, r := range inst.Refused() {
		reasons[r.Name] = r.Reason
	}
	for name, want := range map[string]string{
		"bad-schema": `"type": "object"`,
		"Bad Name!":  "cannot be mapped",
		"no-desc":    "description is empty",
		"get_thing":  `as "getThing"'s does`,
		"broken-ref": "external references are not allowed",
		"task-only":  "only be called as an MCP task",
	} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("refusal of %q: got %q, want it to say %q", name, reasons[name], want)
		}
	}
	if got := invoke(t, inst, "get_thing", `{}`); got != `"called getThing"` {
		t.Errorf("get_thing reached %s", got)
	}
}

func TestNoServableTool(t *testing.T) {
	cfg := helperConfig(t, "good")
	cfg.Skill = "a-skill-name-so-long-that-every-tool-name-is-over-the-64-cap"
	_, err := Launch(context.Background(), cfg)
	if !errors.Is(err, ErrNoTools) || !strings.Contains(err.Error(), "longer than 64") {
		t.Fatalf("want ErrNoTools naming the reason, got %v", err)
	}
	emptyDir(t, cfg.RunDir)
}

func TestLaunchStopsWithItsContext(t *testing.T) {
	cfg := helperConfig(t, "mute")
	cfg.StartTimeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	// The host stops while the server (which never answers) starts: Launch
	// must give up then, not after the minute of its start timeout.
	stop := time.AfterFunc(200*time.Millisecond, cancel)
	defer stop.Stop()
	var cmd *exec.Cmd
	cfg.ConfigureCmd = func(c *exec.Cmd) { cmd = c }
	_, err := Launch(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if cmd.ProcessState == nil {
		t.Error("the process was not waited for")
	}
	emptyDir(t, cfg.RunDir)
}

func TestConcurrentCalls(t *testing.T) {
	inst := launch(t, helperConfig(t, "good"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				msg := strconv.Itoa(g*1000 + i)
				out, err := inst.Invoke(context.Background(), "echo", []byte(`{"message":"`+msg+`"}`), 1<<20)
				if err != nil || string(out) != `"`+msg+`"` {
					t.Errorf("echo %s: %s, %v", msg, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A server in another language: plain Python, run by the operator-allowed
// python3.
func TestPythonServer(t *testing.T) {
	// Debian's, not a version manager's shim (pyenv's is a bash script
	// that needs the PATH a server does not get).
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("/usr/bin/python3 is not installed")
	}
	interp := Interpreters{}
	if err := interp.Set("python3=" + python); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "pyserver")
	digest, err := FolderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger(t)
	cfg := Config{
		Skill: "py", Version: "1.0.0", Dir: dir, Interpreters: interp,
		Spec:   Spec{Command: "python3", Args: []string{"-I", "server.py"}, SHA256: digest},
		RunDir: t.TempDir(), Logger: log, StartTimeout: 30 * time.Second,
	}
	inst := launch(t, cfg)
	var out struct{ Text, Home string }
	if err := json.Unmarshal([]byte(invoke(t, inst, "shout", `{"text":"any language"}`)), &out); err != nil {
		t.Fatal(err)
	}
	if out.Text != "ANY LANGUAGE" || !strings.HasPrefix(out.Home, cfg.RunDir) {
		t.Errorf("shout: %+v; want the text upper-cased and a HOME under %s", out, cfg.RunDir)
	}
}
