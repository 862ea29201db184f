package proc

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain turns this test binary into the watchdog when TestReaper starts
// it as one, as a host's main does, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	MaybeRunReaper()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
