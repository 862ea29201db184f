package proc

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillhost/skillhost/internal/testenv"
)

// victimGroup is the group TestReaper expects the watchdog to kill: on
// Linux one with a member out of the group, which the watchdog must find.
func victimGroup(t *testing.T) (*exec.Cmd, int) { return escaper(t) }

// escaper starts a process group that ignores SIGTERM and whose shell has
// started a sleeper in a session of its own, out of the group; it returns
// the group's leader and the escaped sleeper's pid.
func escaper(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "trap '' TERM; setsid /bin/sleep 60 & echo $!; sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	esc, err2 := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || err2 != nil {
		t.Fatalf("escaper's pid line %q: %v %v", line, err, err2)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		syscall.Kill(esc, syscall.SIGKILL)
		<-exited
	})
	// setsid runs in the background child: wait until it has left the group.
	if !testenv.WaitFor(2*time.Second, func() bool {
		sid, err := unix.Getsid(esc)
		return err == nil && sid == esc
	}) {
		t.Fatalf("pid %d never got a session of its own", esc)
	}
	return cmd, esc
}
