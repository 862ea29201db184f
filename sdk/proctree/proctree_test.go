package proctree

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		stat string
		want Proc
		ok   bool
	}{
		{"42 (sleep) S 7 42 7 0 -1", Proc{PID: 42, PPID: 7, PGID: 42, SID: 7, State: 'S', Comm: "sleep"}, true},
		// A command name with spaces and parentheses of its own.
		{"42 (a) b (c) Z 1 2 3 0", Proc{PID: 42, PPID: 1, PGID: 2, SID: 3, State: 'Z', Comm: "a) b (c"}, true},
		{"42 (x) S 1 2", Proc{}, false},
		{"42 x S 1 2 3", Proc{}, false},
		{"42 (x) S one 2 3", Proc{}, false},
		{"", Proc{}, false},
	} {
		got, ok := Parse(42, []byte(c.stat))
		if ok != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", c.stat, got, ok, c.want, c.ok)
		}
	}
}

func TestListFindsAChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	cmd := exec.Command("/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kids := Children(List())[os.Getpid()]
	found := false
	for _, k := range kids {
		found = found || k == cmd.Process.Pid
	}
	if !found {
		t.Fatalf("child %d not among this process's children %v", cmd.Process.Pid, kids)
	}
	p, ok := Stat(cmd.Process.Pid)
	if !ok || p.PPID != os.Getpid() || p.Comm != "sleep" {
		t.Fatalf("Stat(child) = %+v, %v", p, ok)
	}
}

// shell starts a shell (in a group of its own when group is set) that
// starts a sleeper in a session of its own and a plain one; it returns the
// shell and the escaped sleeper's pid.
func shell(t *testing.T, group bool) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "setsid /bin/sleep 60 & echo $!; /bin/sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	esc, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("escaped pid line %q: %v", line, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		syscall.Kill(esc, syscall.SIGKILL)
		<-exited
	})
	// The background child runs setsid: wait until it has its own session.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p, ok := Stat(esc); ok && p.SID == esc && p.Comm == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never got a session of its own", esc)
		}
	}
	return cmd, esc
}

func gone(pids ...int) bool {
	for _, pid := range pids {
		if p, ok := Stat(pid); ok && !p.Zombie() {
			return false
		}
	}
	return true
}

func waitGone(pids ...int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if gone(pids...) {
			return true
		}
	}
	return gone(pids...)
}

// TestKill kills a tree by its root (as the SDK does for itself) and by its
// process group (as the host's reaper does): the member that left for a
// session of its own goes too, and nothing else is touched.
func TestKill(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	byRoot, esc1 := shell(t, false)
	byGroup, esc2 := shell(t, true)
	spared, esc3 := shell(t, true)
	if n := Kill(nil, []int{byRoot.Process.Pid}); n != 3 {
		t.Errorf("Kill by root found %d processes, want the shell and its two sleepers", n)
	}
	if n := Kill([]int{byGroup.Process.Pid, 0, 1}, nil); n != 3 {
		t.Errorf("Kill by group found %d processes, want the shell and its two sleepers", n)
	}
	if !waitGone(byRoot.Process.Pid, esc1, byGroup.Process.Pid, esc2) {
		t.Fatal("a process of a killed tree is still running")
	}
	if gone(spared.Process.Pid, esc3) {
		t.Fatal("Kill touched a tree it was not given")
	}
}
