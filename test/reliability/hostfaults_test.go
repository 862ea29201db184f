//go:build linux

package reliability

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestHostSIGKILLTakesEverySkillDown kills the host with SIGKILL while it
// runs several skills, three of which started children (one of them in a
// session of its own): every one of those processes is gone within 2 s
// (counted, not sampled). A raw skill that ignores SIGTERM (the
// parent-death signal) is killed by the reaper, also within 2 s.
func TestHostSIGKILLTakesEverySkillDown(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	for _, s := range []string{"s1", "s2", "s3", "s4", "s5"} {
		install(t, tree, s, "1.0.0", "", nil, nil)
	}
	install(t, tree, "hang", "1.0.0", hostile["hang"], nil, map[string]any{"timeout_ms": 60000})
	install(t, tree, "noterm", "1.0.0", hostile["noterm"], nil, nil)
	install(t, tree, "forker", "1.0.0", hostile["forker"], nil, nil)
	h := startHost(t, tree, hostOpts{})
	var children []int
	for _, s := range []string{"s1", "s2"} {
		var out struct{ Result struct{ PID int } }
		json.Unmarshal(h.wantCall(s+".spawn", `{}`, 200, ""), &out)
		children = append(children, out.Result.PID)
	}
	// And a skill's children and grandchildren, one of them in a session
	// of its own, out of the skill's process group.
	var forked struct {
		Result struct {
			Children []int `json:"children"`
			Escaped  []int `json:"escaped"`
		} `json:"result"`
	}
	json.Unmarshal(h.wantCall("forker.fork", `{"n":1,"escape":true}`, 200, ""), &forked)
	if len(forked.Result.Escaped) != 1 {
		t.Fatalf("forker.fork started no child in a new session: %+v", forked.Result)
	}
	children = append(children, forked.Result.Children...)
	children = append(children, forked.Result.Escaped...)
	const grandchildren = 1 // the forker's shell's own sleeper
	// A call stuck in a handler at the moment of the kill.
	go h.do("POST", "/v1/tools/hang.hang/invoke", `{"arguments":{}}`)
	h.waitSkill("hang", 5*time.Second, "a call in flight", func(s skillView) bool {
		v, _ := s.version("1.0.0")
		return v.InFlight == 1
	})
	noterm := activePID(t, h, "noterm")
	all := testenv.Descendants(h.pid())
	t.Cleanup(func() { reap(all...) })
	var counted []int
	reaper := 0
	for _, p := range all {
		switch {
		case p == noterm:
		case testenv.IsReaper(p):
			reaper = p // the host's watchdog; checked apart below
		default:
			counted = append(counted, p)
		}
	}
	if len(counted) != 7+len(children)+grandchildren || reaper == 0 {
		t.Fatalf("before the kill: %d processes under the host (%v), want 7 skills and %d children; reaper pid %d", len(counted), counted, len(children)+grandchildren, reaper)
	}
	h.Kill()
	killed := time.Now()
	if !testenv.WaitFor(2*time.Second, func() bool { return len(alive(counted)) == 0 }) {
		t.Fatalf("%d of %d processes alive 2 s after SIGKILL of the host: %v", len(alive(counted)), len(counted), describe(alive(counted)))
	}
	t.Logf("all %d skill processes and children gone %v after SIGKILL of the host", len(counted), time.Since(killed).Round(time.Microsecond))
	// A raw skill that ignores SIGTERM (its parent-death signal) is killed
	// by the host's reaper, the watchdog that outlives the host.
	if !testenv.WaitFor(2*time.Second, func() bool { return !testenv.Alive(noterm) }) {
		t.Fatalf("a raw skill that ignores SIGTERM (pid %d) outlived its host's SIGKILL by 2 s", noterm)
	}
	if !testenv.WaitFor(2*time.Second, func() bool { return !testenv.Alive(reaper) }) {
		t.Fatalf("the reaper (pid %d) did not exit after its work", reaper)
	}
}

// TestHostRestartRestoresState crashes the host (SIGKILL, no shutdown) with
// a pin and a disable in force, and starts it again on the same tree and
// state folder: the decisions are back, every other skill serves again, and
// no process of the first run is left.
func TestHostRestartRestoresState(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "pinned", "1.0.0", "", nil, nil)
	install(t, tree, "pinned", "2.0.0", "", nil, nil)
	for _, s := range []string{"off", "c", "d"} {
		install(t, tree, s, "1.0.0", "", nil, nil)
	}
	state := filepath.Join(t.TempDir(), "state")
	h := startHost(t, tree, hostOpts{state: state})
	if code, body := h.must("PUT", "/v1/skills/pinned/pin", `{"version":"1.0.0"}`); code != 200 {
		t.Fatalf("pin: %d %s", code, body)
	}
	if code, body := h.must("POST", "/v1/skills/off/disable", nil); code != 200 {
		t.Fatalf("disable: %d %s", code, body)
	}
	first := testenv.Descendants(h.pid())
	t.Cleanup(func() { reap(first...) })
	h.Kill()
	if !testenv.WaitFor(2*time.Second, func() bool { return len(alive(first)) == 0 }) {
		t.Fatalf("processes of the killed host alive: %v", alive(first))
	}

	h2 := startHost(t, tree, hostOpts{state: state})
	version := func(tool string) string {
		var out struct{ Result struct{ Version string } }
		json.Unmarshal(h2.wantCall(tool, `{}`, 200, ""), &out)
		return out.Result.Version
	}
	if v := version("pinned.echo"); v != "1.0.0" {
		t.Errorf("pin lost across a crash: %s serves", v)
	}
	_, _, body := h2.invoke("off.echo", `{}`)
	if code, msg, _ := errorOf(body); code != "unknown_tool" || !strings.Contains(msg, "disabled by an operator") {
		t.Errorf("disable lost across a crash: %s", body)
	}
	if s := h2.skill("off"); !s.Disabled {
		t.Errorf("off not shown disabled: %+v", s)
	}
	for _, s := range []string{"c", "d"} {
		version(s + ".echo")
	}
	checkOnlyActive(t, h2)
	if n := len(testenv.SkillProcesses(h2.pid())); n != 3 {
		t.Errorf("%d processes under the restarted host, want 3 (pinned, c, d)", n)
	}
}

// mountOrSkip runs a mount(2) or skips the test where that is not allowed.
func mountOrSkip(t *testing.T, source, target, fstype string, flags uintptr, data string) {
	t.Helper()
	if err := syscall.Mount(source, target, fstype, flags, data); err != nil {
		t.Skipf("mount %s on %s: %v (needs root or CAP_SYS_ADMIN)", fstype, target, err)
	}
	t.Cleanup(func() { syscall.Unmount(target, syscall.MNT_DETACH) })
}

// TestStateDirReadOnly makes the state folder a read-only bind mount (chmod
// does not stop root): decisions are refused with a clear error, nothing
// changes, and serving goes on. Once writable again, they work.
func TestStateDirReadOnly(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "svc", "1.0.0", "", nil, nil)
	install(t, tree, "svc", "1.1.0", "", nil, nil)
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	mountOrSkip(t, state, state, "", syscall.MS_BIND, "")
	mountOrSkip(t, "", state, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, "")
	h := startHost(t, tree, hostOpts{state: state}) // starts although the folder is read-only
	checkRefused(t, h, "read-only file system")

	if err := syscall.Mount("", state, "", syscall.MS_REMOUNT|syscall.MS_BIND, ""); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	if code, body := h.must("POST", "/v1/skills/svc/disable", nil); code != 200 {
		t.Fatalf("disable once writable: %d %s", code, body)
	}
	h.wantCall("svc.echo", `{}`, 404, "unknown_tool")
}

// TestStateDirFull puts the state folder on a 16 KiB tmpfs and fills it.
func TestStateDirFull(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "svc", "1.0.0", "", nil, nil)
	install(t, tree, "svc", "1.1.0", "", nil, nil)
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	mountOrSkip(t, "tmpfs", state, "tmpfs", 0, "size=16k,mode=0700")
	h := startHost(t, tree, hostOpts{state: state})
	filler := filepath.Join(state, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	checkRefused(t, h, "no space left on device")
	os.Remove(filler)
	if code, body := h.must("PUT", "/v1/skills/svc/pin", `{"version":"1.0.0"}`); code != 200 {
		t.Fatalf("pin once there is room: %d %s", code, body)
	}
	var out struct{ Result struct{ Version string } }
	json.Unmarshal(h.wantCall("svc.echo", `{}`, 200, ""), &out)
	if out.Result.Version != "1.0.0" {
		t.Errorf("pinned version not serving: %s", out.Result.Version)
	}
}

// checkRefused checks that disable, pin and unpin are refused saying why,
// that nothing changed, and that the skill keeps serving.
func checkRefused(t *testing.T, h *host, why string) {
	t.Helper()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/skills/svc/disable", ""},
		{"PUT", "/v1/skills/svc/pin", `{"version":"1.0.0"}`},
		{"DELETE", "/v1/skills/svc/pin", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		code, out := h.must(c.method, c.path, body)
		ecode, msg, ok := errorOf(out)
		if code != 500 || !ok || ecode != "internal" || !strings.Contains(msg, "cannot persist") || !strings.Contains(msg, why) {
			t.Errorf("%s %s with the state folder unwritable: %d %s, want 500 saying it cannot persist (%s)", c.method, c.path, code, out, why)
		} else {
			t.Logf("%s %s: %d %s", c.method, c.path, code, msg)
		}
		var res struct{ Result struct{ Version string } }
		json.Unmarshal(h.wantCall("svc.echo", `{}`, 200, ""), &res)
		if res.Result.Version != "1.1.0" {
			t.Errorf("after a refused %s %s, %s serves", c.method, c.path, res.Result.Version)
		}
	}
	if s := h.skill("svc"); s.Disabled || s.Pinned != "" || s.Active != "1.1.0" {
		t.Errorf("a refused decision changed the skill: %+v", s)
	}
}
