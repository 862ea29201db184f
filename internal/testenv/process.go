package testenv

import (
	"os"
	"testing"
)

// CheckProcessUntouched fails t unless this process is as a daemon that
// does not own it must leave it: not a child subreaper, dumpable, and with
// no watchdog (__skill-reaper) among its children. It returns the
// process's descendants, which are then the skills and what they started.
func CheckProcessUntouched(t testing.TB) []int {
	t.Helper()
	if sub, dump, err := ProcessFlags(); err != nil || sub || !dump {
		t.Errorf("the test process was changed: subreaper %v, dumpable %v (%v)", sub, dump, err)
	}
	kids := Descendants(os.Getpid())
	for _, pid := range kids {
		if IsReaper(pid) {
			t.Errorf("a daemon that does not own its process started a watchdog (pid %d)", pid)
		}
	}
	return kids
}
