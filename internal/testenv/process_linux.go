package testenv

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProcessFlags reads what a daemon that owns its process changes in it
// (host.Config.OwnsProcess): whether this process is a child subreaper,
// and whether it is dumpable. A test that runs a daemon in its own process
// checks that both are as they were (false, true).
func ProcessFlags() (subreaper, dumpable bool, err error) {
	var v int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0); err != nil {
		return false, false, err
	}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return false, false, err
	}
	return v != 0, d == 1, nil
}
