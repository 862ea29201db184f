package mcprt

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the server its own process group, so that it and every
// child it starts are killed together, and a parent-death signal, so that it
// dies with the host even when the host is killed. The signal is SIGKILL, not
// the SIGTERM go-plugin skills get: an MCP server has no stop protocol with
// the host beyond stdin closing, and a server that ignores SIGTERM must not
// outlive its host. Pdeathsig fires when the forking *thread* exits, so the
// fork happens on a goroutine locked to its thread for the process's life
// (see Instance.run).
//
// This duplicates pkg/loader/proc_linux.go's two attributes on purpose: that
// file is moving to pkg/proc, and the runtime should call into pkg/proc once
// it lands.
// Attributes a Config.ConfigureCmd set (a Credential) are kept.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
