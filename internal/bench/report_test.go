package bench

import (
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
