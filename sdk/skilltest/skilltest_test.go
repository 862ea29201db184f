package skilltest

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/skillhost/skillhost/sdk"
)

func TestMain(m *testing.M) {
	// Run by Exec (go-plugin sets the cookie), the test binary is the skill.
	if os.Getenv(sdk.Handshake.MagicCookieKey) == sdk.Handshake.MagicCookieValue {
		echoSkill().Serve()
	}
	os.Exit(m.Run())
}

func echoSkill() *sdk.Skill {
	s := sdk.New("echo", "1.0.0", "Echoes.")
	sdk.Tool(s, "echo", "Echo the text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	return s
}

// openFDs counts this process's open descriptors, or returns -1 where
// /proc/self/fd cannot tell.
func openFDs() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

// TestNothingLeftBehind runs Start, and Exec, several times in subtests,
// whose cleanups run when they end, and checks that the goroutines and
// descriptors they used are all gone soon after: the counts must come back
// to what they were before. (Start used to leave four goroutines a run:
// the client connection's, never closed, and go-plugin's watch of the
// test's own pid.)
func TestNothingLeftBehind(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		runs  int
		start func(t *testing.T) *Client
	}{
		{"Start", 20, func(t *testing.T) *Client { return Start(t, echoSkill()) }},
		{"Exec", 2, func(t *testing.T) *Client { return Exec(t, bin) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			use := func(t *testing.T) {
				res, err := c.start(t).Call(context.Background(), "echo", map[string]string{"text": "hi"})
				if err != nil || string(res) != `"hi"` {
					t.Fatalf("echo = %s, %v", res, err)
				}
			}
			goroutines, fds := runtime.NumGoroutine(), openFDs()
			for i := range c.runs {
				t.Run(strconv.Itoa(i), use)
			}
			var g, f int
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if g, f = runtime.NumGoroutine(), openFDs(); g <= goroutines && f <= fds {
					return
				}
			}
			buf := make([]byte, 1<<20)
			t.Errorf("after %d runs: %d goroutines (%d before), %d descriptors (%d before); goroutines:\n%s",
				c.runs, g, goroutines, f, fds, buf[:runtime.Stack(buf, true)])
		})
	}
}
