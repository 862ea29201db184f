package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
)

var testSkillBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loader-test-")
	if err != nil {
		panic(err)
	}
	testSkillBin, err = testenv.Build(dir, "./internal/testskill")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

type harness struct {
	t    *testing.T
	root string
	reg  *registry.Registry
	l    *Loader
	evMu sync.Mutex
	evs  []Event
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, root: t.TempDir(), reg: registry.New(registry.Config{})}
	cfg := Config{
		Skills: h.root, Registry: h.reg, Grace: 2 * time.Second, Watch: true,
		Debounce: 100 * time.Millisecond, Resync: time.Hour, StartTimeout: 10 * time.Second,
		RestartBackoff: 50 * time.Millisecond, RestartBackoffMax: 500 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
		OnEvent: func(e Event) {
			h.evMu.Lock()
			h.evs = append(h.evs, e)
			h.evMu.Unlock()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.l = l
	t.Cleanup(func() {
		l.Close(context.Background())
		if kids := testenv.Descendants(os.Getpid()); len(kids) > 0 {
			t.Errorf("child processes left after Close: %v", kids)
		}
	})
	return h
}

func (h *harness) install(skill, version string, env map[string]string) string {
	h.t.Helper()
	dir, err := testenv.Install(h.root, testenv.Version{Skill: skill, Version: version, Binary: testSkillBin, Env: env})
	if err != nil {
		h.t.Fatal(err)
	}
	return dir
}

func (h *harness) start() {
	h.t.Helper()
	if err := h.l.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

type echoResult struct {
	Version string `json:"version"`
	Msg     string `json:"msg"`
	PID     int    `json:"pid"`
}

func (h *harness) echo(tool string) (echoResult, error) {
	res, err := h.reg.Invoke(context.Background(), tool, []byte(`{"msg":"hi"}`))
	if err != nil {
		return echoResult{}, err
	}
	var out echoResult
	if err := json.Unmarshal(res.Result, &out); err != nil {
		h.t.Fatalf("decode %s: %v", res.Result, err)
	}
	return out, nil
}

func (h *harness) waitVersion(skill, version string, timeout time.Duration) {
	h.t.Helper()
	if !testenv.WaitFor(timeout, func() bool {
		r, err := h.echo(skill + ".echo")
		return err == nil && r.Version == version
	}) {
		st, _ := h.l.Skill(skill)
		h.t.Fatalf("%s never served %s; status %+v", skill, version, st)
	}
}

func (h *harness) status(skill string) SkillStatus {
	st, ok := h.l.Skill(skill)
	if !ok {
		h.t.Fatalf("no status for %s", skill)
	}
	return st
}

func versionState(st SkillStatus, version string) (VersionStatus, bool) {
	for _, v := range st.Versions {
		if v.Version == version {
			return v, true
		}
	}
	return VersionStatus{}, false
}

func TestStartServesNewestAndIsolatesEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	h := newHarness(t, nil)
	h.install("alpha", "1.0.0", nil)
	h.install("alpha", "1.2.0", map[string]string{"GREETING": "hello"})
	h.install("alpha", "1.10.0", nil) // semver, not string, order
	h.install("beta", "0.1.0", nil)
	h.start()
	r, err := h.echo("alpha.echo")
	if err != nil || r.Version != "1.10.0" {
		t.Fatalf("alpha.echo = %+v, %v", r, err)
	}
	if _, err := h.echo("beta__echo"); err != nil {
		t.Fatal(err)
	}
	res, err := h.reg.Invoke(context.Background(), "alpha.env", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Result), "sk-host-secret") || strings.Contains(string(res.Result), "OPENAI_API_KEY") {
		t.Fatalf("host secret reached the skill: %s", res.Result)
	}
	if !strings.Contains(string(res.Result), "TESTSKILL_VERSION=1.10.0") {
		t.Fatalf("manifest env missing: %s", res.Result)
	}
	// The call's deadline (the default 30 s timeout) reaches the handler,
	// though it travels as timeout_ns and not as a gRPC deadline.
	var dl struct {
		DeadlineMS *int64 `json:"deadline_ms"`
	}
	if err := json.Unmarshal(res.Result, &dl); err != nil || dl.DeadlineMS == nil || *dl.DeadlineMS < 25_000 || *dl.DeadlineMS > 30_000 {
		t.Fatalf("the handler's deadline: %s (%v)", res.Result, err)
	}
	st := h.status("alpha")
	if st.Active != "1.10.0" || len(st.Versions) != 3 {
		t.Fatalf("status = %+v", st)
	}
	if v, _ := versionState(st, "1.10.0"); v.State != StateActive || v.PID == 0 || len(v.Tools) == 0 {
		t.Fatalf("active version status = %+v", v)
	}
	if v, _ := versionState(st, "1.0.0"); v.State != StateStopped {
		t.Fatalf("old version status = %+v", v)
	}
}

func TestBadFoldersReportedNeverServed(t *testing.T) {
	h := newHarness(t, nil)
	h.install("good", "1.0.0", nil)
	// Tampered: the checksum names another file.
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "tampered", Version: "1.0.0", Binary: testSkillBin,
		SHA256: strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}
	// Invalid: the manifest names another version.
	dir := h.install("wrong", "1.0.0", nil)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version":1,"name":"wrong","version":"2.0.0"}`), 0o644)
	h.install("exits", "1.0.0", map[string]string{"TESTSKILL_MODE": "exit"})
	h.install("badschema", "1.0.0", map[string]string{"TESTSKILL_MODE": "badschema"})
	h.install("garbage", "1.0.0", map[string]string{"TESTSKILL_MODE": "garbage"})
	h.start()
	if _, err := h.echo("good.echo"); err != nil {
		t.Fatal(err)
	}
	want := map[string]State{"tampered": StateIncomplete, "wrong": StateInvalid, "exits": StateFailed, "badschema": StateFailed, "garbage": StateFailed}
	for skill, state := range want {
		st := h.status(skill)
		v, _ := versionState(st, "1.0.0")
		if v.State != state || st.Active != "" {
			t.Errorf("%s: state %s (want %s), active %q", skill, v.State, state, st.Active)
		}
		if v.LastError == "" && len(v.Problems) == 0 {
			t.Errorf("%s: no reason given: %+v", skill, v)
		}
		if _, err := h.echo(skill + ".echo"); registry.CodeOf(err) != registry.CodeUnknownTool {
			t.Errorf("%s: call = %v, want unknown_tool", skill, err)
		}
	}
	if v, _ := versionState(h.status("exits"), "1.0.0"); !strings.Contains(v.LastError, "exiting at start as asked") {
		t.Errorf("a skill that exits at start: the reason does not quote its stderr: %q", v.LastError)
	}
	if v, _ := versionState(h.status("badschema"), "1.0.0"); !strings.Contains(v.LastError, "external references are not allowed") {
		t.Errorf("badschema error = %q", v.LastError)
	}
}

func TestNoHandshakeTimesOut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = 500 * time.Millisecond })
	h.install("stuck", "1.0.0", map[string]string{"TESTSKILL_MODE": "nohandshake"})
	start := time.Now()
	h.start()
	if time.Since(start) > 5*time.Second {
		t.Fatalf("start took %v", time.Since(start))
	}
	v, _ := versionState(h.status("stuck"), "1.0.0")
	if v.State != StateFailed || !strings.Contains(v.LastError, "timeout") {
		t.Fatalf("stuck = %+v", v)
	}
}

// Swap under load: 8 callers keep calling while new versions are renamed
// into the tree; no call fails, and later calls are served by the new
// version; the old process is gone within the grace period.
func TestSwapUnderLoad(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	first, err := h.echo("svc.echo")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls, fails atomic.Int64
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				calls.Add(1)
				if _, err := h.echo("svc.echo"); err != nil {
					fails.Add(1)
					t.Errorf("call failed during swap: %v", err)
				}
			}
		}()
	}
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		h.install("svc", v, nil)
		h.waitVersion("svc", v, 5*time.Second)
	}
	cancel()
	wg.Wait()
	if fails.Load() != 0 {
		t.Fatalf("%d of %d calls failed", fails.Load(), calls.Load())
	}
	if !testenv.WaitFor(3*time.Second, func() bool { return !testenv.Alive(first.PID) }) {
		t.Fatalf("old process %d still alive after the grace period", first.PID)
	}
	t.Logf("%d calls, 0 failed, across 3 swaps", calls.Load())
}

func TestLongCallsAcrossSwap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Grace = 1500 * time.Millisecond })
	h.install("svc", "1.0.0", nil)
	h.start()
	type out struct {
		res *registry.Result
		err error
	}
	call := func(ms int) chan out {
		ch := make(chan out, 1)
		go func() {
			res, err := h.reg.Invoke(context.Background(), "svc.sleep", []byte(fmt.Sprintf(`{"ms":%d}`, ms)))
			ch <- out{res, err}
		}()
		return ch
	}
	short := call(800)  // longer than the debounce, shorter than the grace
	long := call(10000) // longer than the grace
	time.Sleep(100 * time.Millisecond)
	h.install("svc", "2.0.0", nil)
	h.waitVersion("svc", "2.0.0", 5*time.Second)
	if st := h.status("svc"); st.Active != "2.0.0" {
		t.Fatalf("status = %+v", st)
	} else if v, _ := versionState(st, "1.0.0"); v.State != StateDraining || v.InFlight == 0 || v.DrainDeadline == nil {
		t.Fatalf("old version = %+v", v)
	}
	s := <-short
	if s.err != nil || !strings.Contains(string(s.res.Result), `"version":"1.0.0"`) {
		t.Fatalf("short call = %v, %v", s.res, s.err)
	}
	l := <-long
	if e := registry.AsError(l.err); e.Code != registry.CodeSkillUnavailable || !strings.Contains(e.Message, "retired") {
		t.Fatalf("long call = %v", l.err)
	}
}

func TestPartialCopyNeverLaunched(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	// Copy 2.0.0 in place, slowly: manifest first, binary in chunks.
	sum, _ := testenv.SHA256File(testSkillBin)
	dir := filepath.Join(h.root, "svc", "2.0.0")
	os.MkdirAll(dir, 0o755)
	v := testenv.Version{Skill: "svc", Version: "2.0.0"}
	os.WriteFile(filepath.Join(dir, "manifest.json"), v.Manifest(sum), 0o644)
	data, _ := os.ReadFile(testSkillBin)
	f, _ := os.OpenFile(filepath.Join(dir, "skill"), os.O_CREATE|os.O_WRONLY, 0o755)
	chunk := len(data)/5 + 1
	for i := 0; i < len(data); i += chunk {
		f.Write(data[i:min(i+chunk, len(data))])
		if i+chunk >= len(data) {
			break // complete now: 2.0.0 may serve from here on
		}
		time.Sleep(150 * time.Millisecond)
		if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.0.0" {
			t.Fatalf("during the copy: %+v, %v", r, err)
		}
	}
	f.Close()
	h.waitVersion("svc", "2.0.0", 3*time.Second)
	for _, e := range h.events() {
		if e.Version == "2.0.0" && e.State == StateFailed {
			t.Fatalf("a partial copy was marked failed: %+v", e)
		}
	}
}

func TestBrokenNewVersionKeepsOldServing(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	h.install("svc", "2.0.0", map[string]string{"TESTSKILL_MODE": "exit"})
	h.install("svc", "3.0.0", map[string]string{"TESTSKILL_MODE": "badschema"})
	h.install("svc", "4.0.0", map[string]string{"TESTSKILL_MODE": "garbage"}) // fails the handshake
	if !testenv.WaitFor(5*time.Second, func() bool {
		st := h.status("svc")
		a, _ := versionState(st, "2.0.0")
		b, _ := versionState(st, "3.0.0")
		c, _ := versionState(st, "4.0.0")
		return a.State == StateFailed && b.State == StateFailed && c.State == StateFailed
	}) {
		t.Fatalf("status = %+v", h.status("svc"))
	}
	for v, says := range map[string]string{"2.0.0": "exiting at start", "3.0.0": "schema", "4.0.0": "not a go-plugin handshake line"} {
		if vs, _ := versionState(h.status("svc"), v); !strings.Contains(vs.LastError, says) {
			t.Errorf("%s failed with %q, which does not say %q", v, vs.LastError, says)
		}
	}
	if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.0.0" {
		t.Fatalf("old version not serving: %+v, %v", r, err)
	}
}

func TestCrashRestarts(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	r, _ := h.echo("svc.echo")
	// A call in flight during the crash gets skill_crashed.
	inflight := make(chan error, 1)
	go func() {
		_, err := h.reg.Invoke(context.Background(), "svc.sleep", []byte(`{"ms":5000}`))
		inflight <- err
	}()
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(r.PID, syscall.SIGKILL)
	if err := <-inflight; registry.CodeOf(err) != registry.CodeSkillCrashed {
		t.Fatalf("in-flight call = %v, want skill_crashed", err)
	}
	// Calls fail fast and retryable until it is back.
	start := time.Now()
	_, err := h.echo("svc.echo")
	if err != nil {
		// Unavailable once the crash is noticed; a call that raced the
		// notice reports the crash, retryable because echo is idempotent.
		if e := registry.AsError(err); (e.Code != registry.CodeSkillUnavailable && e.Code != registry.CodeSkillCrashed) || !e.Retryable {
			t.Fatalf("call after crash = %v", err)
		}
	}
	if time.Since(start) > time.Second {
		t.Fatalf("call after crash took %v", time.Since(start))
	}
	h.waitVersion("svc", "1.0.0", 5*time.Second)
	r2, _ := h.echo("svc.echo")
	if r2.PID == r.PID {
		t.Fatal("not restarted")
	}
	if v, _ := versionState(h.status("svc"), "1.0.0"); v.Restarts < 1 {
		t.Fatalf("restarts not counted: %+v", v)
	}
	var crash *Event
	for _, e := range h.events() {
		if e.State == StateCrashed {
			crash = &e
		}
	}
	if crash == nil || crash.Reason != "process exited unexpectedly (signal: killed)" {
		t.Fatalf("the crash event does not say how the process ended: %+v", crash)
	}
	// The restarted instance's active event says it is a restart (what
	// metrics count), and the first start's does not. The event is sent
	// after the swap, so wait for it rather than read the log once.
	activeOf := func(pid int) (Event, bool) {
		for _, e := range h.events() {
			if e.State == StateActive && e.PID == pid {
				return e, true
			}
		}
		return Event{}, false
	}
	if !testenv.WaitFor(5*time.Second, func() bool { _, ok := activeOf(r2.PID); return ok }) {
		t.Fatalf("no active event for the restarted process %d: %+v", r2.PID, h.events())
	}
	if e, _ := activeOf(r2.PID); !e.Restart {
		t.Errorf("the restart's active event is not marked Restart: %+v", e)
	}
	if e, ok := activeOf(r.PID); !ok || e.Restart {
		t.Errorf("the first start's active event: %+v (found %v), want one not marked Restart", e, ok)
	}
}

func TestOverwriteBinaryInPlace(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "0.9.0", nil) // an older version the host must not fall back to meanwhile
	dir := h.install("svc", "1.0.0", nil)
	h.start()
	h.waitVersion("svc", "1.0.0", time.Second)
	r, _ := h.echo("svc.echo")

	// 8 callers keep calling while the binary is overwritten in place, slowly,
	// as cp does (truncate, then write in chunks), and the manifest checksum is
	// fixed last: no call may fail, and none may be served by 0.9.0.
	var failed, older, calls atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, err := h.echo("svc.echo")
				calls.Add(1)
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				case out.Version != "1.0.0":
					older.Add(1)
				}
			}
		})
	}
	data, _ := os.ReadFile(testSkillBin)
	data = append(data, []byte("\x00padding to change the checksum")...)
	f, err := os.OpenFile(filepath.Join(dir, "skill"), os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatalf("overwrite: %v", err) // no "text file busy": the host runs a private copy
	}
	chunk := len(data)/4 + 1
	for i := 0; i < len(data); i += chunk {
		f.Write(data[i:min(i+chunk, len(data))])
		time.Sleep(200 * time.Millisecond) // longer than the debounce: the host rescans mid-copy
	}
	f.Close()
	sum, _ := testenv.SHA256File(filepath.Join(dir, "skill"))
	v := testenv.Version{Skill: "svc", Version: "1.0.0"}
	os.WriteFile(filepath.Join(dir, "manifest.json"), v.Manifest(sum), 0o644)
	picked := testenv.WaitFor(5*time.Second, func() bool {
		r2, err := h.echo("svc.echo")
		return err == nil && r2.PID != r.PID
	})
	close(stop)
	wg.Wait()
	if !picked {
		t.Fatalf("overwrite not picked up: %+v", h.status("svc"))
	}
	if failed.Load() > 0 || older.Load() > 0 {
		t.Fatalf("during the overwrite, of %d calls %d failed (first: %v) and %d were served by 0.9.0",
			calls.Load(), failed.Load(), firstErr.Load(), older.Load())
	}
}

// While a version reloaded in place drains its old instance, the status
// shows both instances: the new one active, the old one draining with its
// own pid and the call it still runs.
func TestReloadInPlaceShowsBothInstances(t *testing.T) {
	// The old instance's call lasts until the test lets go of it, and its
	// drain waits that long: a reload in place hashes, copies and starts
	// the binary, seconds on a loaded machine, and a call of fixed length
	// could end before the new instance is up.
	h := newHarness(t, func(c *Config) { c.Grace = time.Minute })
	dir := h.install("svc", "1.0.0", nil)
	h.start()
	old := h.status("svc").Versions[0].PID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := make(chan error, 1)
	go func() {
		_, err := h.reg.Invoke(ctx, "svc.sleep", []byte(`{"ms":60000}`))
		slow <- err
	}()
	if !testenv.WaitFor(time.Second, func() bool { return h.status("svc").Versions[0].InFlight == 1 }) {
		t.Fatalf("the slow call never started: %+v", h.status("svc"))
	}
	data, _ := os.ReadFile(testSkillBin)
	data = append(data, []byte("\x00padding to change the checksum")...)
	if err := os.WriteFile(filepath.Join(dir, "skill"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := testenv.SHA256File(filepath.Join(dir, "skill"))
	v := testenv.Version{Skill: "svc", Version: "1.0.0"}
	os.WriteFile(filepath.Join(dir, "manifest.json"), v.Manifest(sum), 0o644)
	var st SkillStatus
	if !testenv.WaitFor(30*time.Second, func() bool {
		st = h.status("svc")
		// The old instance's drain deadline is set just after it joins
		// the draining set: wait for the whole picture.
		return len(st.Versions) == 2 && st.Versions[0].State == StateActive && st.Versions[0].PID != old &&
			st.Versions[1].DrainDeadline != nil
	}) {
		t.Fatalf("reload in place not picked up: %+v", st)
	}
	if len(st.Versions) != 2 {
		t.Fatalf("want the active and the draining instance of 1.0.0, got %+v", st.Versions)
	}
	d := st.Versions[1]
	if d.Version != "1.0.0" || d.State != StateDraining || d.PID != old || d.InFlight != 1 || d.DrainDeadline == nil {
		t.Fatalf("draining entry = %+v (old pid %d)", d, old)
	}
	if a := st.Versions[0]; a.InFlight != 0 || a.DrainDeadline != nil {
		t.Fatalf("active entry = %+v", a)
	}
	// The swap did not cut the old instance's call: it ends when its
	// caller gives up, and then the drain is over.
	cancel()
	if err := <-slow; registry.CodeOf(err) != registry.CodeCanceled {
		t.Fatalf("the call on the old instance = %v, want it canceled by its caller", err)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return len(h.status("svc").Versions) == 1 }) {
		t.Fatalf("the drained instance stays listed: %+v", h.status("svc"))
	}
}

func TestRemoveVersions(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	d2 := h.install("svc", "2.0.0", nil)
	h.start()
	h.waitVersion("svc", "2.0.0", time.Second)
	os.RemoveAll(d2)
	h.waitVersion("svc", "1.0.0", 5*time.Second)
	os.RemoveAll(filepath.Join(h.root, "svc"))
	if !testenv.WaitFor(5*time.Second, func() bool {
		_, err := h.echo("svc.echo")
		return registry.CodeOf(err) == registry.CodeUnknownTool
	}) {
		t.Fatal("tools not removed with the skill")
	}
}

func TestKillsSkillChildren(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	res, err := h.reg.Invoke(context.Background(), "svc.spawn", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ PID int }
	json.Unmarshal(res.Result, &out)
	if !testenv.Alive(out.PID) {
		t.Fatal("child not running")
	}
	h.l.Close(context.Background())
	if !testenv.WaitFor(2*time.Second, func() bool { return !testenv.Alive(out.PID) }) {
		t.Fatalf("skill's child %d outlived it", out.PID)
	}
}

func (h *harness) events() []Event {
	h.evMu.Lock()
	defer h.evMu.Unlock()
	return append([]Event(nil), h.evs...)
}

// Message sizes follow the manifest, not go-plugin's 4 MiB gRPC default.
func TestMessageSizesFollowManifestLimits(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "roomy", Version: "1.0.0", Binary: testSkillBin,
		Limits: map[string]any{"max_response_bytes": 12 << 20, "max_request_bytes": 8 << 20}}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "tight", Version: "1.0.0", Binary: testSkillBin,
		Limits: map[string]any{"max_response_bytes": 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	h.start()
	ctx := context.Background()
	res, err := h.reg.Invoke(ctx, "roomy.big", []byte(fmt.Sprintf(`{"bytes":%d}`, 6<<20)))
	if err != nil || len(res.Result) < 6<<20 {
		t.Fatalf("6 MiB result under a 12 MiB limit: %v", err)
	}
	big := `{"msg":"` + strings.Repeat("x", 5<<20) + `"}`
	if _, err := h.reg.Invoke(ctx, "roomy.echo", []byte(big)); err != nil {
		t.Fatalf("5 MiB request under an 8 MiB limit: %v", err)
	}
	_, err = h.reg.Invoke(ctx, "tight.big", []byte(fmt.Sprintf(`{"bytes":%d}`, 2<<20)))
	if e := registry.AsError(err); e.Code != registry.CodeResponseTooLarge {
		t.Fatalf("2 MiB result over a 1 MiB limit: %v", err)
	}
	if _, err := h.echo("tight.echo"); err != nil {
		t.Fatalf("skill unusable after an oversized result: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	l, err := New(Config{Skills: t.TempDir(), Registry: registry.New(registry.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	c := l.cfg
	if c.Grace != 30*time.Second || c.Debounce != 300*time.Millisecond || c.Resync != 30*time.Second ||
		c.StartTimeout != 10*time.Second || c.RestartBackoffMax != 30*time.Second {
		t.Fatalf("defaults = grace %v debounce %v resync %v start %v backoff max %v",
			c.Grace, c.Debounce, c.Resync, c.StartTimeout, c.RestartBackoffMax)
	}
	if _, err := New(Config{Registry: registry.New(registry.Config{})}); err == nil {
		t.Fatal("a loader without a skills folder was built")
	}
}

func TestStaleRunDirsRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, runDirPrefix+"stale")
	live := filepath.Join(tmp, runDirPrefix+"live")
	for dir, pid := range map[string]int{stale: dead.Process.Pid, live: os.Getpid()} {
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprint(pid)), 0o600)
	}
	l, err := New(Config{Skills: t.TempDir(), Registry: registry.New(registry.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	l.Close(context.Background())
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale run folder of a dead host kept: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("run folder of a live host removed: %v", err)
	}
}

func TestPrereleaseServesOnlyWhenPinnedOrAlone(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.install("svc", "2.0.0-rc.1", nil)
	h.install("solo", "0.1.0-beta", nil)
	h.start()
	if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.0.0" {
		t.Fatalf("a release candidate displaced the stable version: %+v %v", r, err)
	}
	if r, err := h.echo("solo.echo"); err != nil || r.Version != "0.1.0-beta" {
		t.Fatalf("a lone pre-release does not serve: %+v %v", r, err)
	}
	if err := h.l.Pin(context.Background(), "svc", "2.0.0-rc.1"); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.echo("svc.echo"); r.Version != "2.0.0-rc.1" {
		t.Fatalf("pinned pre-release not serving: %+v", r)
	}
}

// A pin to a version that is valid on disk but does not start is refused
// and undone: the serving version goes on, and newer versions are not held
// back by a pin on one that never ran.
func TestPinToAVersionThatFailsIsUndone(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.install("svc", "0.9.0", map[string]string{"TESTSKILL_MODE": "exit"})
	h.start()
	err := h.l.Pin(context.Background(), "svc", "0.9.0")
	if registry.CodeOf(err) != registry.CodeBadRequest || !strings.Contains(err.Error(), "cannot pin svc to 0.9.0: it failed to start:") ||
		!strings.Contains(err.Error(), "1.0.0 keeps serving and the pin is as it was") {
		t.Fatalf("pin to a version that exits at start: %v", err)
	}
	if st := h.status("svc"); st.Pinned != "" || st.Active != "1.0.0" {
		t.Fatalf("after the refused pin: pinned %q, active %q", st.Pinned, st.Active)
	}
	if _, pin := h.l.cfg.State.Get("svc"); pin != "" {
		t.Fatalf("refused pin persisted: %q", pin)
	}
	// A newer version is not held back.
	h.install("svc", "1.1.0", nil)
	if err := h.l.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.1.0" {
		t.Fatalf("newer version after a refused pin: %+v %v", r, err)
	}
	// A pin that holds stays, and one that fails then leaves it as it was.
	if err := h.l.Pin(context.Background(), "svc", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := h.l.Pin(context.Background(), "svc", "0.9.0"); registry.CodeOf(err) != registry.CodeBadRequest {
		t.Fatalf("second refused pin: %v", err)
	}
	if st := h.status("svc"); st.Pinned != "1.0.0" || st.Active != "1.0.0" {
		t.Fatalf("a refused pin changed the pin that held: pinned %q, active %q", st.Pinned, st.Active)
	}
}

func TestHandlerOutputReachesTheLog(t *testing.T) {
	var buf testenv.SyncBuffer
	h := newHarness(t, func(c *Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &buf})
	})
	h.install("svc", "1.0.0", map[string]string{"TESTSKILL_SHOUT": "1"})
	h.start()
	if _, err := h.reg.Invoke(context.Background(), "svc.shout", []byte(`{"msg":"hello-log"}`)); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(3*time.Second, func() bool {
		out := buf.String()
		return strings.Contains(out, "stdout says hello-log") && strings.Contains(out, "stderr says hello-log") &&
			strings.Contains(out, "logger says")
	}) {
		t.Fatalf("handler output not in the host log:\n%s", buf.String())
	}
	// sdk.Logger's lines arrive through hclog at their own level.
	if !strings.Contains(buf.String(), "[WARN]  svc@1.0.0.") || !regexp.MustCompile(`\[WARN\] .*logger says: .*msg=hello-log`).MatchString(buf.String()) {
		t.Errorf("sdk.Logger's warning not relayed at WARN:\n%s", buf.String())
	}
	// Every line of the skill carries skill, version and pid, the handler's
	// raw output included (go-plugin gets its logger before the pid exists).
	pid := fmt.Sprintf("pid=%d", h.status("svc").Versions[0].PID)
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if (strings.Contains(line, "says hello-log") || strings.Contains(line, "logger says")) &&
			!(strings.Contains(line, "skill=svc") && strings.Contains(line, "version=1.0.0") && strings.Contains(line, pid)) {
			t.Errorf("a skill's log line lacks skill, version or %s: %s", pid, line)
		}
	}
}

// TestSkillUser runs skills as another account: as root it checks that the
// skill runs with that uid and gid and no supplementary groups, that the
// host's environment is out of its reach, and that a version folder the
// account cannot enter fails with a reason that says so. As another user
// it checks that the loader refuses the setting up front.
func TestSkillUser(t *testing.T) {
	nobody, err := proc.LookupSkillUser("65534:65534")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		_, err := New(Config{Skills: t.TempDir(), Registry: registry.New(registry.Config{}), SkillUser: nobody})
		if err == nil || !strings.Contains(err.Error(), "only when the host runs as root") {
			t.Fatalf("New with a skill user, not as root: err = %v", err)
		}
		return
	}
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	h := newHarness(t, func(c *Config) { c.SkillUser = nobody })
	// t.TempDir makes 0700 folders; the skill user must reach its own.
	for _, d := range []string{filepath.Dir(h.root), h.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.install("alpha", "1.0.0", nil)
	h.install("beta", "1.0.0", nil)
	if err := os.Chmod(filepath.Join(h.root, "beta"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.start()

	res, err := h.reg.Invoke(context.Background(), "alpha.env", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Env    []string `json:"env"`
		UID    int      `json:"uid"`
		GID    int      `json:"gid"`
		Groups []int    `json:"groups"`
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.UID != 65534 || got.GID != 65534 || len(got.Groups) > 1 || (len(got.Groups) == 1 && got.Groups[0] != 65534) {
		t.Fatalf("skill runs as uid %d gid %d groups %v, want 65534/65534 and no others", got.UID, got.GID, got.Groups)
	}
	if strings.Contains(string(res.Result), "sk-host-secret") {
		t.Fatalf("host secret reached the skill: %s", res.Result)
	}
	pid := h.status("alpha").Versions[0].PID
	if _, err := h.echo("alpha.echo"); err != nil || pid == 0 {
		t.Fatalf("alpha.echo: %v (pid %d)", err, pid)
	}

	v, _ := versionState(h.status("beta"), "1.0.0")
	if v.State != StateFailed || !strings.Contains(v.LastError, "must be able to search") {
		t.Fatalf("beta in a folder the skill user cannot enter: state %s, error %q", v.State, v.LastError)
	}
}

// TestBusyFolderDoesNotHoldBackChanges: a skill that keeps writing into its
// own version folder (its working directory) restarts the quiet period with
// every write; a new version copied in meanwhile must still be picked up
// within the debounce's maximum wait, not at the next periodic resync.
func TestBusyFolderDoesNotHoldBackChanges(t *testing.T) {
	h := newHarness(t, nil) // debounce 100 ms, so at most 1 s; resync 1 h
	d1 := h.install("svc", "1.0.0", nil)
	h.start()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
				os.WriteFile(filepath.Join(d1, "busy.log"), []byte(strconv.Itoa(i)), 0o644)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	// 2.0.0 written in place (no atomic rename, so no fast path).
	sum, _ := testenv.SHA256File(testSkillBin)
	dir := filepath.Join(h.root, "svc", "2.0.0")
	os.MkdirAll(dir, 0o755)
	data, _ := os.ReadFile(testSkillBin)
	os.WriteFile(filepath.Join(dir, "skill"), data, 0o755)
	v := testenv.Version{Skill: "svc", Version: "2.0.0"}
	os.WriteFile(filepath.Join(dir, "manifest.json"), v.Manifest(sum), 0o644)
	h.waitVersion("svc", "2.0.0", 5*time.Second)
}

// TestManifestToolsMustMatch: a manifest that lists its tools is held to
// them; a binary that describes others fails with every difference named,
// and the version that lists them right serves.
func TestManifestToolsMustMatch(t *testing.T) {
	h := newHarness(t, nil)
	all := []string{"big", "crash", "echo", "env", "fail", "sleep", "spawn"}
	good, err := testenv.Install(h.root, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: testSkillBin, Tools: all})
	if err != nil || good == "" {
		t.Fatal(err)
	}
	wrong := append([]string{"ghost"}, all[1:]...) // lists ghost, omits big
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "svc", Version: "2.0.0", Binary: testSkillBin, Tools: wrong}); err != nil {
		t.Fatal(err)
	}
	h.start()
	st := h.status("svc")
	v2, _ := versionState(st, "2.0.0")
	if v2.State != StateFailed ||
		!strings.Contains(v2.LastError, `the manifest lists tool "ghost", which the binary does not describe`) ||
		!strings.Contains(v2.LastError, `the binary describes tool "big", which the manifest does not list`) {
		t.Fatalf("2.0.0 = %+v", v2)
	}
	if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.0.0" {
		t.Fatalf("the version that lists its tools right does not serve: %+v %v", r, err)
	}
}

// TestCrashLoopBacksOff: each restart of a skill that keeps crashing waits
// twice as long as the one before, up to the cap; the loop is visible in
// the status (crashed, restarts, last error); and after sustained uptime
// the backoff starts over.
func TestCrashLoopBacksOff(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.RestartBackoff, c.RestartBackoffMax, c.RestartResetAfter = 200*time.Millisecond, 400*time.Millisecond, 1500*time.Millisecond
	})
	h.install("svc", "1.0.0", nil)
	h.start()
	// gap is the time from the crash to the restart's start, from the
	// loader's own events: the backoff alone, plus scheduling.
	crashAndGap := func() time.Duration {
		t.Helper()
		r, err := h.echo("svc.echo")
		if err != nil {
			t.Fatal(err)
		}
		from := len(h.events())
		syscall.Kill(r.PID, syscall.SIGKILL)
		if !testenv.WaitFor(2*time.Second, func() bool {
			v, _ := versionState(h.status("svc"), "1.0.0")
			return v.State == StateCrashed && v.LastError != ""
		}) {
			t.Fatalf("the crash is not visible: %+v", h.status("svc"))
		}
		h.waitVersion("svc", "1.0.0", 5*time.Second)
		var crashed, started time.Time
		for _, e := range h.events()[from:] {
			switch {
			case e.State == StateCrashed && crashed.IsZero():
				crashed = e.Time
			case e.State == StateStarting && !crashed.IsZero() && started.IsZero():
				started = e.Time
			}
		}
		if crashed.IsZero() || started.IsZero() {
			t.Fatalf("no crashed → starting events: %+v", h.events()[from:])
		}
		return started.Sub(crashed)
	}
	var gaps []time.Duration
	for range 4 {
		gaps = append(gaps, crashAndGap())
	}
	t.Logf("backoff gaps: %v", gaps)
	for i, want := range []time.Duration{200, 400, 400, 400} {
		if gaps[i] < want*time.Millisecond {
			t.Errorf("restart %d after %v, before its backoff of %vms", i+1, gaps[i], want)
		}
	}
	if gaps[3] > 1200*time.Millisecond { // uncapped it would be 1.6 s
		t.Errorf("restart 4 after %v: the backoff is not capped at 400ms", gaps[3])
	}
	if v, _ := versionState(h.status("svc"), "1.0.0"); v.Restarts < 4 {
		t.Errorf("restarts = %d, want at least 4", v.Restarts)
	}
	// Up for longer than RestartResetAfter: the next crash starts over.
	time.Sleep(1700 * time.Millisecond)
	if g := crashAndGap(); g >= 400*time.Millisecond {
		t.Errorf("after sustained uptime the restart waited %v; the backoff did not reset to 200ms", g)
	}
}

// TestBrokenCopiesAreAnnounced: a version found invalid or incomplete is
// never launched, yet watchers hear of it once, with its problems; a rescan
// that finds it unchanged says nothing again.
func TestBrokenCopiesAreAnnounced(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "svc", Version: "2.0.0", Binary: testSkillBin, SHA256: strings.Repeat("0", 64)}); err != nil {
		t.Fatal(err)
	}
	announced := func() []Event {
		var out []Event
		for _, e := range h.events() {
			if e.Version == "2.0.0" {
				out = append(out, e)
			}
		}
		return out
	}
	if !testenv.WaitFor(5*time.Second, func() bool { return len(announced()) > 0 }) {
		t.Fatal("an incomplete copy was not announced")
	}
	if err := h.l.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := announced()
	if len(evs) != 1 || evs[0].State != StateIncomplete || !strings.Contains(evs[0].Reason, "sha256 mismatch") {
		t.Fatalf("events for 2.0.0: %+v", evs)
	}
}

// TestSkillGOMAXPROCS: Config.SkillGOMAXPROCS reaches a skill whose
// manifest sets no GOMAXPROCS, as its environment and as the Go runtime's
// setting; a manifest's own GOMAXPROCS wins; without the setting nothing
// is added to the skill's environment.
func TestSkillGOMAXPROCS(t *testing.T) {
	if _, err := New(Config{Skills: t.TempDir(), Registry: registry.New(registry.Config{}), SkillGOMAXPROCS: -1}); err == nil ||
		!strings.Contains(err.Error(), "GOMAXPROCS must be 0") {
		t.Fatalf("New with SkillGOMAXPROCS -1: err = %v", err)
	}
	type envOut struct {
		Env        []string `json:"env"`
		GOMAXPROCS int      `json:"gomaxprocs"`
	}
	get := func(t *testing.T, h *harness, tool string) envOut {
		t.Helper()
		res, err := h.reg.Invoke(context.Background(), tool, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out envOut
		if err := json.Unmarshal(res.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	vars := func(env []string) []string {
		var out []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "GOMAXPROCS=") {
				out = append(out, kv)
			}
		}
		return out
	}
	// One harness at a time: each checks at its end that it left no
	// child process, and the other's would be counted.
	t.Run("set", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.SkillGOMAXPROCS = 1 })
		h.install("alpha", "1.0.0", nil)
		h.install("beta", "1.0.0", map[string]string{"GOMAXPROCS": "2"})
		h.start()
		if got := get(t, h, "alpha.env"); got.GOMAXPROCS != 1 || !slices.Equal(vars(got.Env), []string{"GOMAXPROCS=1"}) {
			t.Errorf("alpha (no GOMAXPROCS in its manifest): runtime %d, env %v; want 1 and GOMAXPROCS=1", got.GOMAXPROCS, vars(got.Env))
		}
		if got := get(t, h, "beta.env"); got.GOMAXPROCS != 2 || !slices.Equal(vars(got.Env), []string{"GOMAXPROCS=2"}) {
			t.Errorf("beta (GOMAXPROCS 2 in its manifest): runtime %d, env %v; want the manifest's 2 alone", got.GOMAXPROCS, vars(got.Env))
		}
	})
	t.Run("unset", func(t *testing.T) {
		h := newHarness(t, nil)
		h.install("gamma", "1.0.0", nil)
		h.start()
		if got := get(t, h, "gamma.env"); len(vars(got.Env)) != 0 {
			t.Errorf("gamma without the setting: env %v, want no GOMAXPROCS", vars(got.Env))
		}
	})
}

// A serving version whose folder is left incomplete for good (its binary
// overwritten, its manifest's sha256 not) keeps serving, but does not hold
// back a newer version that arrives beside it.
func TestIncompleteServingFolderYieldsToNewer(t *testing.T) {
	h := newHarness(t, nil)
	dir := h.install("svc", "1.0.0", nil)
	h.start()
	h.waitVersion("svc", "1.0.0", time.Second)
	data, err := os.ReadFile(testSkillBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill"), append(data, "\x00changed"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(5*time.Second, func() bool {
		v, ok := versionState(h.status("svc"), "1.0.0")
		return ok && v.State == StateActive && strings.Contains(v.Problems.Error(), "sha256 mismatch")
	}) {
		t.Fatalf("the overwritten folder was not judged incomplete: %+v", h.status("svc"))
	}
	if r, err := h.echo("svc.echo"); err != nil || r.Version != "1.0.0" {
		t.Fatalf("while its folder is incomplete, 1.0.0 should keep serving: %+v, %v", r, err)
	}
	h.install("svc", "2.0.0", nil)
	h.waitVersion("svc", "2.0.0", 5*time.Second)
}

// A crash marks the skill's tools unavailable at once even while its
// supervisor is busy launching another version, so callers get the
// retryable skill_unavailable, not skill_crashed, for the whole launch.
func TestCrashWhileLaunchingMarksUnavailable(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = 4 * time.Second })
	h.install("svc", "1.0.0", nil)
	h.start()
	r, err := h.echo("svc.echo")
	if err != nil {
		t.Fatal(err)
	}
	h.install("svc", "2.0.0", map[string]string{"TESTSKILL_MODE": "nohandshake"})
	if !testenv.WaitFor(3*time.Second, func() bool {
		v, _ := versionState(h.status("svc"), "2.0.0")
		return v.State == StateStarting
	}) {
		t.Fatalf("2.0.0 never started launching: %+v", h.status("svc"))
	}
	syscall.Kill(r.PID, syscall.SIGKILL)
	if !testenv.WaitFor(time.Second, func() bool {
		_, err := h.echo("svc.echo")
		return registry.CodeOf(err) == registry.CodeSkillUnavailable
	}) {
		_, err := h.echo("svc.echo")
		t.Fatalf("a second after the crash, with 2.0.0 still launching, a call gets %v; want skill_unavailable", err)
	}
}

// A given run folder is a parent: the loader makes its own folder in it,
// removes stale ones of dead hosts, and never touches anything else there.
func TestGivenRunDirIsNeverEmptied(t *testing.T) {
	parent := t.TempDir()
	keep := filepath.Join(parent, "notes.txt")
	os.WriteFile(keep, []byte("mine"), 0o600)
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, runDirPrefix+"stale")
	os.MkdirAll(stale, 0o700)
	os.WriteFile(filepath.Join(stale, ownerFile), []byte(fmt.Sprint(dead.Process.Pid)), 0o600)
	newLoader := func() *Loader {
		l, err := New(Config{Skills: t.TempDir(), Registry: registry.New(registry.Config{}), RunDir: parent})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newLoader(), newLoader() // two hosts sharing one --run-dir
	for _, l := range []*Loader{a, b} {
		if filepath.Dir(l.cfg.RunDir) != parent || !strings.HasPrefix(filepath.Base(l.cfg.RunDir), runDirPrefix) {
			t.Fatalf("run folder %s, want a %s* folder in %s", l.cfg.RunDir, runDirPrefix, parent)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale run folder of a dead host kept: %v", err)
	}
	a.Close(context.Background())
	if _, err := os.Stat(b.cfg.RunDir); err != nil {
		t.Errorf("closing one host removed the other's run folder: %v", err)
	}
	b.Close(context.Background())
	entries, _ := os.ReadDir(parent)
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" || len(entries) != 1 {
		t.Fatalf("the run folder's other contents were touched: %v, left %v", err, entries)
	}
}

// An entrypoint in a subfolder is watched too: a manifest copied in before
// its binary (bin/skill) is served once the binary lands, without waiting
// for the periodic resync (an hour in this harness).
func TestEntrypointInSubfolderIsWatched(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	dir := filepath.Join(h.root, "svc", "1.0.0")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := testenv.SHA256File(testSkillBin)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(testenv.Version{Skill: "svc", Version: "1.0.0"}.Manifest(sum), &m)
	m["entrypoint"] = "bin/skill"
	mb, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(3*time.Second, func() bool {
		st, ok := h.l.Skill("svc")
		v, _ := versionState(st, "1.0.0")
		return ok && v.State == StateIncomplete
	}) {
		st, _ := h.l.Skill("svc")
		t.Fatalf("the version without its binary was not judged incomplete: %+v", st)
	}
	bin, err := os.ReadFile(testSkillBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "skill"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	h.waitVersion("svc", "1.0.0", 5*time.Second)
}

// A skill whose folder is deleted leaves the status once nothing of it
// runs, and comes back as new when it is installed again.
func TestDeletedSkillLeavesTheStatus(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.install("other", "1.0.0", nil)
	h.start()
	h.waitVersion("svc", "1.0.0", time.Second)
	if err := os.RemoveAll(filepath.Join(h.root, "svc")); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(5*time.Second, func() bool {
		h.l.Rescan(context.Background())
		_, ok := h.l.Skill("svc")
		return !ok
	}) {
		t.Fatalf("a deleted skill is still listed: %+v", h.l.Status())
	}
	if st := h.l.Status(); len(st) != 1 || st[0].Name != "other" {
		t.Fatalf("status after the delete: %+v", st)
	}
	if err := h.l.Disable(context.Background(), "svc"); registry.CodeOf(err) != registry.CodeNotFound {
		t.Fatalf("disable of a deleted skill = %v, want not_found", err)
	}
	h.install("svc", "1.0.0", nil)
	h.waitVersion("svc", "1.0.0", 5*time.Second)
}

// Skills make their go-plugin sockets inside the run folder, so those of
// skills killed with a killed host go with the folder at the next start.
func TestSocketsLiveInTheRunFolder(t *testing.T) {
	h := newHarness(t, nil)
	h.install("svc", "1.0.0", nil)
	h.start()
	h.waitVersion("svc", "1.0.0", time.Second)
	if filepath.Dir(h.l.sockDir) != h.l.cfg.RunDir {
		t.Fatalf("socket folder %q is not in the run folder %s", h.l.sockDir, h.l.cfg.RunDir)
	}
	entries, err := os.ReadDir(h.l.sockDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Type()&os.ModeSocket == 0 {
		t.Fatalf("want the one skill's socket in %s, found %v", h.l.sockDir, entries)
	}
}
