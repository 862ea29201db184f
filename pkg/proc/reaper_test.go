//go:build unix

package proc

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// answering starts a process group (a shell and its sleeping child) that
// ignores SIGTERM, as a hostile skill may, whose shell answers SIGUSR1 with
// a line, and returns it with a probe that asks. A SIGKILL sent to the group
// before the probe is already pending when the probe's signal arrives, so a
// killed group never answers: unlike a look at /proc, the probe cannot take
// a group the kernel is still taking down for alive, and needs no sleep.
func answering(t *testing.T) (*exec.Cmd, func() bool) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap '' TERM; trap 'echo alive' USR1; sleep 60 & echo ready; while wait $!; [ $? -gt 128 ]; do :; done`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe() // not StdoutPipe: Wait must not close it under a read
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		r.Close()
	})
	lines := bufio.NewReader(r)
	if line, err := lines.ReadString('\n'); line != "ready\n" {
		t.Fatalf("answering group's first line %q: %v", line, err)
	}
	return cmd, func() bool {
		if cmd.Process.Signal(syscall.SIGUSR1) != nil {
			return false
		}
		line, err := lines.ReadString('\n') // end of file once the group is dead
		return err == nil && line == "alive\n"
	}
}

func TestReaper(t *testing.T) {
	watchdog := []string{os.Args[0], "__skill-reaper"} // this test binary; TestMain makes it the watchdog
	victim, escapedPID := victimGroup(t)
	released, releasedAnswers := answering(t)
	spared, sparedAnswers := answering(t)

	r, err := StartReaper(watchdog)
	if err != nil {
		t.Fatal(err)
	}
	r.Track(victim.Process.Pid)
	r.Track(released.Process.Pid)
	r.Untrack(released.Process.Pid) // stopped by the host: a reused id must not be killed
	// The host dies: its end of the pipe closes without "bye".
	r.w.Close()
	r.cmd.Wait()
	if !testenv.WaitFor(2*time.Second, func() bool { return !testenv.Alive(victim.Process.Pid) }) {
		t.Fatal("the watchdog did not kill a tracked group when the host died")
	}
	if escapedPID > 0 && !testenv.WaitFor(2*time.Second, func() bool { return !testenv.Alive(escapedPID) }) {
		t.Fatal("the watchdog did not kill a tracked group's child that left it with setsid")
	}
	if !releasedAnswers() { // the watchdog has exited: whatever it killed is dead or dying
		t.Fatal("the watchdog killed a group the host had untracked")
	}

	// A clean stop says bye: nothing is killed.
	r2, err := StartReaper(watchdog)
	if err != nil {
		t.Fatal(err)
	}
	r2.Track(spared.Process.Pid)
	r2.Close()
	r2.Close() // safe twice
	// Close waited for the watchdog to exit: whatever it killed is dead or dying.
	if r2.cmd.ProcessState == nil || !r2.cmd.ProcessState.Success() {
		t.Fatalf("the watchdog did not exit cleanly after bye: %v", r2.cmd.ProcessState)
	}
	if !sparedAnswers() {
		t.Fatal("the watchdog killed a group after a clean stop")
	}
}
