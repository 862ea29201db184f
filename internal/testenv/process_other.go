//go:build !linux

package testenv

// ProcessFlags reports a process as a daemon leaves it alone: there is no
// child subreaper or dumpable flag to read off Linux.
func ProcessFlags() (subreaper, dumpable bool, err error) { return false, true, nil }
