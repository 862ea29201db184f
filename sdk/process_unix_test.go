//go:build linux

package sdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/proctree"
)

func init() {
	helpers["exit"] = runExiter
	helpers["host"] = runHost
}

// exiterPids is what the "exit" helper writes before it serves.
type exiterPids struct {
	Skill int `json:"skill"`
	// In its group, orphaned in its group, in a session of its own.
	Children []int `json:"children"`
}

// runExiter is the "exit" helper: a skill with three children, one of each
// kind exitGroup must find, that serves until its host goes.
func runExiter() {
	pids := exiterPids{Skill: os.Getpid()}
	start := func(cmd *exec.Cmd) {
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		pids.Children = append(pids.Children, cmd.Process.Pid)
	}
	start(exec.Command("/bin/sleep", "60"))
	// The shell exits at once; its sleeper stays in the skill's group, the
	// child of whoever adopts it.
	out, err := exec.Command("/bin/sh", "-c", "/bin/sleep 60 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		panic(err)
	}
	var orphan int
	if _, err := fmt.Sscan(string(out), &orphan); err != nil {
		panic(err)
	}
	pids.Children = append(pids.Children, orphan)
	own := exec.Command("/bin/sleep", "60")
	own.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start(own)
	b, _ := json.Marshal(pids)
	if err := os.WriteFile(os.Getenv("SDK_TEST_PIDS"), b, 0o600); err != nil {
		panic(err)
	}
	s := sdk.New("exiter", "1.0.0", "Exits with its host.")
	sdk.Tool(s, "ping", "Answer.", func(ctx context.Context, in struct{}) (string, error) { return "pong", nil })
	s.Serve()
}

// runHost is the "host" helper: it starts the "exit" helper as skillhost
// starts a skill, in a process group of its own and with its stdout (for
// the handshake line), and waits until it is killed.
func runHost() {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=exit") // the last one counts
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		panic(err)
	}
}

// exiter is a running "exit" helper.
type exiter struct {
	cmd    *exec.Cmd // the skill, or its "host"
	pids   exiterPids
	socket string // go-plugin's, from the handshake line
	stderr string // a file
}

// startExiter starts the "exit" helper, or the "host" helper that starts
// it, as a skill in a process group of its own, and waits for its
// handshake line.
func startExiter(t *testing.T, mode string) *exiter {
	t.Helper()
	dir := t.TempDir()
	e := &exiter{stderr: filepath.Join(dir, "stderr")}
	stderr, err := os.Create(e.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pidFile := filepath.Join(dir, "pids.json")
	e.cmd = helper(mode, sdk.Handshake.MagicCookieKey+"="+sdk.Handshake.MagicCookieValue,
		"SDK_TEST_PIDS="+pidFile, "TMPDIR="+dir) // go-plugin's socket goes in dir
	e.cmd.Stdout, e.cmd.Stderr = w, stderr
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = e.cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever a failed test left running.
		syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range append([]int{e.pids.Skill}, e.pids.Children...) {
			if p, ok := proctree.Stat(pid); ok && pid > 1 && !p.Zombie() && (p.Comm == "sleep" || pid == e.pids.Skill) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if e.cmd.ProcessState == nil {
			e.cmd.Wait()
		}
	})
	line := make(chan string, 1)
	go func() { // ends when the handshake line arrives or every writer is gone
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- l
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(30 * time.Second):
		e.cmd.Process.Kill()
		l = <-line
	}
	f := strings.Split(strings.TrimSpace(l), "|")
	if len(f) < 5 || f[2] != "unix" {
		t.Fatalf("handshake line %q; stderr: %s", l, e.log())
	}
	e.socket = f[3]
	b, err := os.ReadFile(pidFile)
	if err == nil {
		err = json.Unmarshal(b, &e.pids)
	}
	if err != nil || len(e.pids.Children) != 3 {
		t.Fatalf("pids %s: %v", b, err)
	}
	return e
}

// children returns the skill's children's pids; none before it started.
func (e *exiter) children() []int {
	if e == nil {
		return nil
	}
	return e.pids.Children
}

func (e *exiter) log() string {
	b, _ := os.ReadFile(e.stderr)
	return string(b)
}

// checkCleanedUp checks that the skill's children are gone and that
// go-plugin removed its socket.
func (e *exiter) checkCleanedUp(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		alive := 0
		for _, pid := range e.pids.Children {
			if p, ok := proctree.Stat(pid); ok && !p.Zombie() {
				alive++
			}
		}
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of the skill's children %v still run", alive, e.pids.Children)
			break
		}
	}
	if _, err := os.Stat(e.socket); !os.IsNotExist(err) {
		t.Errorf("go-plugin's socket %s is still there (%v)", e.socket, err)
	}
}

// adoptOrphans makes this process adopt the orphans among its descendants
// until the test ends (PR_SET_CHILD_SUBREAPER), and reap them, pids among
// them, then. So the skill, its host gone, becomes this process's child,
// whose status can be read, and the skill's killed children do not wait
// as zombies for an init that may not reap them.
func adoptOrphans(t *testing.T, pids func() []int) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	t.Cleanup(func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
		for _, pid := range pids() {
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				var ws syscall.WaitStatus
				if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid || err == syscall.ECHILD {
					break
				}
			}
		}
	})
}

// waitWithin waits for a process's end, for 20 s at most.
func waitWithin(t *testing.T, wait func() syscall.WaitStatus, kill func()) syscall.WaitStatus {
	t.Helper()
	ch := make(chan syscall.WaitStatus, 1)
	go func() { ch <- wait() }()
	select {
	case ws := <-ch:
		return ws
	case <-time.After(20 * time.Second):
		kill()
		t.Errorf("the skill did not exit within 20 s")
		return <-ch
	}
}

// TestExitStatusOnSIGTERM sends a skill the host's parent-death signal and
// checks that it kills its children, lets go-plugin remove its socket and
// exits with status 4, as docs/sdk.md says. It used to kill its process
// group, itself included, and die of SIGKILL.
func TestExitStatusOnSIGTERM(t *testing.T) {
	var e *exiter
	adoptOrphans(t, func() []int { return e.children() })
	e = startExiter(t, "exit")
	if err := syscall.Kill(e.pids.Skill, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ws := waitWithin(t, func() syscall.WaitStatus {
		e.cmd.Wait()
		return e.cmd.ProcessState.Sys().(syscall.WaitStatus)
	}, func() { e.cmd.Process.Kill() })
	if !ws.Exited() || ws.ExitStatus() != 4 {
		t.Errorf("wait status %v (exited %v, status %d, signal %v), want status 4; stderr:\n%s", ws, ws.Exited(), ws.ExitStatus(), ws.Signal(), e.log())
	}
	e.checkCleanedUp(t)
}

// TestExitStatusWhenTheHostGoes kills the skill's host with SIGKILL, with
// no parent-death signal set, and checks that the skill notices, kills its
// children, lets go-plugin remove its socket and exits with status 3.
func TestExitStatusWhenTheHostGoes(t *testing.T) {
	var e *exiter
	adoptOrphans(t, func() []int { return e.children() })
	e = startExiter(t, "host")
	e.cmd.Process.Kill()
	e.cmd.Wait()
	ws := waitWithin(t, func() syscall.WaitStatus {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(e.pids.Skill, &ws, 0, nil); err != syscall.EINTR {
				return ws
			}
		}
	}, func() { syscall.Kill(e.pids.Skill, syscall.SIGKILL) })
	if !ws.Exited() || ws.ExitStatus() != 3 || !strings.Contains(e.log(), "host went away; exiting") {
		t.Errorf("wait status %v (exited %v, status %d, signal %v), want status 3 after a log line; stderr:\n%s", ws, ws.Exited(), ws.ExitStatus(), ws.Signal(), e.log())
	}
	e.checkCleanedUp(t)
}
