//go:build !linux

package proc

import (
	"os/exec"
	"syscall"
)

// SetProcAttr gives the skill its own process group and, with a skill user,
// that account; there is no parent-death signal here.
func SetProcAttr(cmd *exec.Cmd, u *SkillUser) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
}

// SetGroupAttr gives cmd its own process group, keeping the attributes already set; there is
// no parent-death signal here, so sig is unused.
func SetGroupAttr(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
}

// KillGroup sends SIGKILL to the process group pid leads.
func KillGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// WaitExit blocks until exited reports true, polling: there are no pidfds
// here.
func WaitExit(pid int, exited func() bool) { pollExit(exited) }
