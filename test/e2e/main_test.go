package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

var (
	hostBin  string
	skillBin string
	examples string // a built tree of the example skills, copied per test
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithBinaries(m, func(bins testenv.Binaries) error {
		hostBin, skillBin, examples = bins.Host, bins.Skill, bins.Examples
		return nil
	}))
}

// exampleTree copies the built example skills into a fresh tree.
func exampleTree(t *testing.T) string { return testenv.CopyTree(t, examples) }

func startDaemon(t *testing.T, skills string, args ...string) *testenv.Daemon {
	t.Helper()
	full := append([]string{"--skills", skills, "--state-dir", filepath.Join(t.TempDir(), "state"), "--grace", "2s", "--debounce", "100ms"}, args...)
	d := testenv.StartDaemon(t, hostBin, nil, full...)
	waitReady(t, d)
	return d
}

func waitReady(t *testing.T, d *testenv.Daemon) {
	t.Helper()
	if !testenv.WaitFor(30*time.Second, func() bool {
		code, _ := d.Do(t, "GET", "/readyz", nil)
		return code == 200
	}) {
		t.Fatalf("daemon never ready\n%s", d.Logs())
	}
}

type apiErr struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Retryable bool           `json:"retryable"`
		Details   map[string]any `json:"details"`
	} `json:"error"`
}

// wantError checks an answer is the one error shape with code and status.
func wantError(t *testing.T, what string, status int, body []byte, wantStatus int, code string) {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("%s: not the error shape: %d %s", what, status, body)
		return
	}
	if status != wantStatus || e.Error.Code != code {
		t.Errorf("%s: got %d %s (%s), want %d %s", what, status, e.Error.Code, e.Error.Message, wantStatus, code)
	}
}

// sse reads server-sent events from the daemon until ctx ends.
func sse(t *testing.T, ctx context.Context, d *testenv.Daemon, path string) <-chan [2]string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.URL+path, nil)
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	ch := make(chan [2]string, 256)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				select {
				case ch <- [2]string{event, v}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch
}
