package proc

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// SetProcAttr gives the skill its own process group (so its children can be
// killed with it) and a parent-death signal (so it dies with the host even
// after SIGKILL). The signal is SIGTERM, not SIGKILL: a dying skill cannot
// act on SIGKILL, while on SIGTERM the SDK kills its whole process group, so
// children a handler started die too. A skill that ignores SIGTERM survives
// its host's SIGKILL; the SDK's re-parenting watch is the second line.
// With a skill user the child switches to it (and drops every
// supplementary group) before it changes folder, sets the parent-death
// signal (which a change of credentials would clear) and execs.
func SetProcAttr(cmd *exec.Cmd, u *SkillUser) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
}

// SetGroupAttr gives cmd its own process group and the parent-death signal sig, keeping the
// attributes already set (a Credential). SetProcAttr does this with SIGTERM, which a go-plugin
// skill's SDK turns into killing its own group; an MCP server (pkg/mcprt) has no stop protocol
// beyond stdin closing and may ignore SIGTERM, so it gets SIGKILL. Pdeathsig fires when the
// forking *thread* exits: fork from a goroutine locked to its thread for the process's life.
func SetGroupAttr(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.SysProcAttr.Pdeathsig = sig
}

// KillGroup sends SIGKILL to the process group pid leads.
func KillGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// WaitExit blocks until the process pid has exited. It waits on a pidfd, so
// a crash is noticed at once and an idle skill costs no wake-ups; where
// pidfds are missing it polls exited.
func WaitExit(pid int, exited func() bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if err == unix.ESRCH {
			return // already gone
		}
		pollExit(exited)
		return
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || err != unix.EINTR {
			return
		}
	}
}
