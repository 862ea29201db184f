//go:build linux

package reliability

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestResourceLimits applies the manifest's process limits (memory_mb,
// max_open_files, cpu_seconds) and shows the kernel enforcing them: a skill
// that allocates without bound dies, is restarted with growing backoff, and
// every other skill keeps serving meanwhile.
func TestResourceLimits(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	install(t, tree, "hog-mem", "1.0.0", hostile["hog"], nil, map[string]any{"memory_mb": 256})
	install(t, tree, "hog-files", "1.0.0", hostile["hog"], nil, map[string]any{"max_open_files": 64})
	install(t, tree, "hog-cpu", "1.0.0", hostile["hog"], nil, map[string]any{"cpu_seconds": 1, "timeout_ms": 20000})
	install(t, tree, "hog-free", "1.0.0", hostile["hog"], nil, nil)
	h := startHost(t, tree, hostOpts{})

	limits := func(h *host, skill string) map[string][]uint64 {
		body := h.wantCall(skill+".limits", `{}`, 200, "")
		var out struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		json.Unmarshal(body, &out)
		got := map[string][]uint64{}
		for k, v := range out.Result {
			var l []uint64
			if json.Unmarshal(v, &l) == nil {
				got[k] = l
			}
		}
		return got
	}
	t.Run("the kernel reports the manifest's limits", func(t *testing.T) {
		h := h.with(t)
		for skill, want := range map[string]map[string]uint64{
			"hog-mem":   {"data": 256 << 20},
			"hog-files": {"nofile": 64},
			"hog-cpu":   {"cpu": 1},
		} {
			got := limits(h, skill)
			for k, v := range want {
				if l := got[k]; len(l) != 2 || l[0] != v || l[1] != v {
					t.Errorf("%s: %s limit %v, want soft = hard = %d", skill, k, l, v)
				}
			}
		}
		// Without limits in the manifest the skill keeps the host's.
		if l := limits(h, "hog-free")["data"]; len(l) != 2 || l[0] == 256<<20 {
			t.Errorf("hog-free data limit %v: a limit was applied without a manifest field", l)
		}
	})

	t.Run("unbounded allocation dies and restarts with backoff", func(t *testing.T) {
		h := h.with(t)
		h.wantCall("hog-mem.eat", `{"mib":64}`, 200, "") // well under the limit: fine
		var recoveries []time.Duration
		pid := activePID(t, h, "hog-mem")
		for i := 0; i < 3; i++ {
			start := time.Now()
			_, code, body := h.invoke("hog-mem.eat", `{"mib":0}`)
			if code != "skill_crashed" && code != "skill_unavailable" {
				t.Fatalf("unbounded eat %d: %s, want skill_crashed", i, body)
			}
			// Meanwhile every other skill serves.
			h.wantCall("good.echo", `{}`, 200, "")
			h.wantCall("hog-free.limits", `{}`, 200, "")
			v := h.waitSkill("hog-mem", 30*time.Second, "restarted", func(s skillView) bool {
				v, _ := s.version("1.0.0")
				return v.State == "active" && v.PID != pid
			})
			recoveries = append(recoveries, time.Since(start))
			vv, _ := v.version("1.0.0")
			if vv.Restarts != i+1 {
				t.Errorf("restarts = %d after %d crashes", vv.Restarts, i+1)
			}
			pid = vv.PID
		}
		t.Logf("recovery after each out-of-memory death: %v (backoff 250ms doubling)", recoveries)
		if recoveries[2] <= recoveries[0] || recoveries[2] < 900*time.Millisecond {
			t.Errorf("no growing backoff visible: %v", recoveries)
		}
		if strings.Contains(h.Logs(), "out of memory") {
			t.Logf("the skill's own %q reached the host's log", "fatal error: runtime: out of memory")
		}
	})

	t.Run("descriptor limit", func(t *testing.T) {
		h := h.with(t)
		body := h.wantCall("hog-files.files", `{}`, 200, "")
		var out struct {
			Result struct {
				Opened int    `json:"opened"`
				Error  string `json:"error"`
			} `json:"result"`
		}
		json.Unmarshal(body, &out)
		if out.Result.Opened >= 64 || out.Result.Opened == 0 || !strings.Contains(out.Result.Error, "too many open files") {
			t.Errorf("hog-files opened %d more files (%q), want fewer than 64 and EMFILE", out.Result.Opened, out.Result.Error)
		}
		h.wantCall("hog-files.limits", `{}`, 200, "") // still serving after hitting its limit
		body = h.wantCall("hog-free.files", `{}`, 200, "")
		json.Unmarshal(body, &out)
		if out.Result.Opened <= 64 {
			t.Errorf("hog-free opened only %d files: a limit was applied without a manifest field", out.Result.Opened)
		}
	})

	t.Run("CPU limit", func(t *testing.T) {
		h := h.with(t)
		pid := activePID(t, h, "hog-cpu")
		start := time.Now()
		_, code, body := h.invoke("hog-cpu.burn", `{"ms":10000}`)
		// 1 s of CPU; more wall time when the machine is busy with other tests.
		if code != "skill_crashed" || time.Since(start) > 15*time.Second {
			t.Fatalf("burn past cpu_seconds: %s after %v, want skill_crashed after about 1s of CPU", body, time.Since(start))
		}
		if testenv.Alive(pid) {
			t.Errorf("pid %d alive after its CPU limit", pid)
		}
		h.wantCall("good.echo", `{}`, 200, "")
	})

	t.Run("cgroups", func(t *testing.T) {
		t.Log(cgroupReport())
	})
}

// cgroupReport says whether a cgroup v2 hierarchy with a memory controller
// is writable here, which decides whether cgroups could replace prlimit.
func cgroupReport() string {
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		b, err := os.ReadFile(root + "/cgroup.controllers")
		if err != nil {
			continue
		}
		probe := fmt.Sprintf("%s/skillhost-probe-%d", root, os.Getpid())
		werr := os.Mkdir(probe, 0o755)
		if werr == nil {
			os.Remove(probe)
		}
		return fmt.Sprintf("cgroup v2 at %s: controllers %q, writable: %v (%v); memory controller: %v",
			root, strings.TrimSpace(string(b)), werr == nil, werr, strings.Contains(string(b), "memory"))
	}
	return "no cgroup v2 hierarchy (no cgroup.controllers under /sys/fs/cgroup): prlimit is the only per-skill limit"
}
