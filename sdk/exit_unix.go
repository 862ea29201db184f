//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"syscall"
)

// handleTermination makes SIGTERM (which skillhost sets as the skill's
// parent-death signal) take the skill's whole process group down: a handler
// may have started children, and they must not outlive the skill when the
// host dies. Only a group leader does this, so a skill started by another
// host, inside that host's group, never signals it.
func handleTermination() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		exitGroup(4)
	}()
}

// exitGroup kills the skill's children (when it leads its process group)
// and exits.
func exitGroup(code int) {
	if pid := os.Getpid(); syscall.Getpgrp() == pid {
		syscall.Kill(-pid, syscall.SIGKILL) // includes this process
	}
	os.Exit(code)
}
