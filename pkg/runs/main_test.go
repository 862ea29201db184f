package runs

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// crashHelperEnv makes the test binary act as the writer that
// TestCrashSafetySIGKILL kills (the helper-process pattern go-plugin's
// tests use): its value is the state folder, and crashRunEnv names the run.
const (
	crashHelperEnv = "RUNS_TEST_CRASH_HELPER"
	crashRunEnv    = "RUNS_TEST_CRASH_RUN"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		if err := crashHelper(dir, os.Getenv(crashRunEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// newTestStore opens a store in a fresh folder and closes it at cleanup.
func newTestStore(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// fixedClock returns a clock that starts at a fixed instant and moves one
// millisecond per call, so times and ids in tests are predictable.
func fixedClock() func() time.Time {
	t := time.Date(2026, 12, 5, 23, 46, 18, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}
