//go:build linux

package reliability

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDeadlineIsAlwaysTimeout calls a tool that never answers, many times
// at once, with a short timeout_ms. Every call must answer 504 timeout.
//
// It found a bug, since fixed: a few answered 502 invalid_response ("rpc
// error: code = DeadlineExceeded desc = stream terminated by RST_STREAM with
// error code: CANCEL") when the skill's gRPC server, enforcing the
// propagated deadline, reset the stream before the host's own timer fired.
// The deadline is no longer a gRPC deadline (it travels as timeout_ns and
// only the host's timer ends a call), and callError still maps a
// DeadlineExceeded status to a timeout. See docs/reliability.md.
func TestDeadlineIsAlwaysTimeout(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "hang", "1.0.0", hostile["hang"], nil, map[string]any{"timeout_ms": 100})
	h := startHost(t, tree, hostOpts{})
	const callers, each = 8, 10
	var mu sync.Mutex
	codes := map[string]int{}
	var sample string
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				_, body, err := h.do("POST", "/v1/tools/hang.hang/invoke", `{"arguments":{}}`)
				code, _, _ := errorOf(body)
				if err != nil {
					code = "transport error"
				}
				mu.Lock()
				codes[code]++
				if code != "timeout" && sample == "" {
					sample = strings.TrimSpace(string(body))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls past a 100ms deadline in %v: %v", callers*each, time.Since(start).Round(time.Millisecond), codes)
	if bad := callers*each - codes["timeout"]; bad > 0 {
		if codes["timeout"]+codes["invalid_response"] == callers*each && strings.Contains(sample, "DeadlineExceeded") {
			knownBug(t, "%d of %d calls past their deadline answered invalid_response instead of timeout, e.g. %s", bad, callers*each, sample)
		} else {
			t.Errorf("%d of %d calls past their deadline did not answer timeout, e.g. %s", bad, callers*each, sample)
		}
	}
}
