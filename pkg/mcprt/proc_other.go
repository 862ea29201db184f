//go:build !linux

package mcprt

import (
	"os/exec"
	"syscall"
)

// setProcAttr: a process group of its own; no parent-death signal outside
// Linux (see proc_linux.go).
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
