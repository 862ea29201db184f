//go:build unix && !linux

package proc

import (
	"os/exec"
	"testing"
)

// victimGroup is the group TestReaper expects the watchdog to kill; without
// /proc the watchdog kills groups only.
func victimGroup(t *testing.T) (*exec.Cmd, int) { return stubborn(t), 0 }
