//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// stubborn starts a process group (a shell and its sleeping child) that
// ignores SIGTERM, as a hostile skill may; the test kills what is left.
func stubborn(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "trap '' TERM; sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return cmd
}

func TestReaper(t *testing.T) {
	watchdog := []string{os.Args[0], "__skill-reaper"} // this test binary; TestMain makes it the watchdog
	victim, escapedPID := victimGroup(t)
	released, spared := stubborn(t), stubborn(t)

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
	if !testenv.Alive(released.Process.Pid) {
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
	time.Sleep(200 * time.Millisecond)
	if !testenv.Alive(spared.Process.Pid) {
		t.Fatal("the watchdog killed a group after a clean stop")
	}
}
