//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
	"testing"
)

// victimGroup is the group TestReaper expects the watchdog to kill; without
// /proc the watchdog kills groups only.
func victimGroup(t *testing.T) (*exec.Cmd, int) { return stubborn(t), 0 }

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
