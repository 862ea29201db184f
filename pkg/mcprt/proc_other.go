//go:build !linux

package mcprt

import (
	"os/exec"
	"syscall"
)

// setProcAttr: a process group of its own; no parent-death signal outside
// Linux (see proc_linux.go).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
