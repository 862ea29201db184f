//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/skillhost/skillhost/sdk/proctree"
)

// handleTermination makes SIGTERM (which skillhost sets as the skill's
// parent-death signal) take the skill's descendants and the rest of its
// process group down, then exit with status 4: a handler
// may have started children, and they must not outlive the skill when the
// host dies. Only a group leader does this, so a skill started by another
// host, inside that host's group, never signals it.
//
// SIGPIPE is ignored for the same reason: when the host dies, the pipes of
// the skill's stdout and stderr break, and Go's default for a write to a
// broken stdout or stderr is to die of SIGPIPE at once, before the SIGTERM
// handler has taken the children down. Ignored, the write fails instead.
func handleTermination() {
	signal.Ignore(syscall.SIGPIPE)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		exitGroup(4)
	}()
}

// exitGroup kills the skill's descendants, also those that left its
// process group (setsid), and, when it leads its group, the group's other
// members; then it exits with code. The descendants go first and by their
// parent links, which the skill's exit would cut: an orphan is re-parented
// out of reach.
//
// The group's members are found in /proc and killed one by one, because
// kill(-pgid) would kill this process too, before it could exit with code
// and before go-plugin removed its socket. Without /proc (not Linux) only
// that signal reaches them, and the skill dies of SIGKILL with them.
func exitGroup(code int) {
	pid := os.Getpid()
	leader := syscall.Getpgrp() == pid
	roots := []int{pid}
	procs := proctree.List()
	for _, p := range procs {
		if leader && p.PGID == pid && p.PID != pid {
			roots = append(roots, p.PID)
		}
	}
	proctree.Kill(nil, roots) // never this process itself
	if leader && len(procs) == 0 {
		syscall.Kill(-pid, syscall.SIGKILL) // includes this process
	}
	exit(code)
}
