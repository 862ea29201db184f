//go:build !linux

package loader

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd, u *SkillUser) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func waitExit(pid int, exited func() bool) { pollExit(exited) }
