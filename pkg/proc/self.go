package proc

import "os"

// ReaperCommand is the argv that starts this very binary as the watchdog
// (see StartReaper): by /proc/self/exe where it exists, which works even
// after the file was replaced by an upgrade. The argument only names the
// process in ps; the binary must call MaybeRunReaper at the top of main. It
// returns nil when the binary cannot be found, and a host then runs without
// a watchdog (the parent-death signal still applies).
func ReaperCommand() []string {
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil
		}
	}
	return []string{exe, "__skill-reaper"}
}
