package bench

import (
	"os"
	"testing"
	"time"
)

// TestFmtDur keeps the report's durations at three significant figures, so
// a table column reads 837 ms beside 1.21 s rather than 836.65 ms.
func TestFmtDur(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{1950 * time.Nanosecond, "1.95 µs"},
		{186 * time.Microsecond, "186 µs"},
		{4499 * time.Microsecond, "4.50 ms"},
		{57670 * time.Microsecond, "57.7 ms"},
		{836650 * time.Microsecond, "837 ms"},
		{1273 * time.Millisecond, "1.27 s"},
	} {
		if got := fmtDur(c.d); got != c.want {
			t.Errorf("fmtDur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestCPUSplit reads this process's own /proc/PID/stat: a busy loop's CPU
// shows as user time, and the split adds up to cpuTime.
func TestCPUSplit(t *testing.T) {
	pid := os.Getpid()
	user0, _ := cpuSplit(pid)
	total0 := cpuTime(pid)
	if total0 == 0 {
		t.Skip("no /proc/PID/stat here")
	}
	// Spin until the process has used 300 ms more CPU (however long a
	// loaded machine takes to give it), at most 20 s.
	var spin uint64
	for deadline := time.Now().Add(20 * time.Second); cpuTime(pid)-total0 < 300*time.Millisecond && time.Now().Before(deadline); {
		for i := 0; i < 1e5; i++ {
			spin += uint64(i) ^ spin>>3
		}
	}
	user, sys := cpuSplit(pid)
	if user-user0 < 200*time.Millisecond {
		t.Errorf("user CPU rose %v over a busy loop of 300 ms of CPU (spin %d), want ≥ 200 ms", user-user0, spin)
	}
	if total := cpuTime(pid); total < user+sys {
		t.Errorf("cpuTime %v < user %v + system %v read before it", total, user, sys)
	}
}
