package loader

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillhost/skillhost/pkg/proc"
)

// capBounding reads the capability bounding set of a process (or, with a
// "pid/task/tid" path, of one thread).
func capBounding(t *testing.T, proc string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no CapBnd in /proc/%s/status", proc)
	return 0
}

// TestRootSkillsLoseCapabilities starts a skill from a root host: the skill
// has none of proc.DroppedCaps in its bounding set (so it cannot read the
// non-dumpable host's environment or memory even as root), and every
// thread of the host that is not a skill's launch thread keeps them.
func TestRootSkillsLoseCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a host that is not root has no capabilities to drop")
	}
	baseline, _ := threadsLackingPtrace(t)
	h := newHarness(t, nil)
	h.install("alpha", "1.0.0", nil)
	h.start()
	pid := h.status("alpha").Versions[0].PID
	if pid == 0 {
		t.Fatal("alpha has no pid")
	}
	skill := capBounding(t, strconv.Itoa(pid))
	for _, c := range proc.DroppedCaps {
		if skill&(1<<c) != 0 {
			t.Errorf("the skill's bounding set %#x still holds capability %d", skill, c)
		}
	}
	if skill&(1<<unix.CAP_NET_BIND_SERVICE) == 0 {
		t.Errorf("the skill lost capabilities it should keep: bounding set %#x", skill)
	}
	// One thread per running skill (locked to it) gave its capabilities
	// away; every other thread kept them. The baseline counts the threads
	// of skills of earlier tests that still wind down, and the main thread
	// if one ran there (Go never ends the main thread, it parks it).
	if lacking, tasks := threadsLackingPtrace(t); lacking > baseline+1 {
		t.Errorf("%d of %d host threads lack CAP_SYS_PTRACE (%d before the skill started); only the skill's launch thread may", lacking, tasks, baseline)
	}
}

// threadsLackingPtrace counts this process's threads whose bounding set
// lacks CAP_SYS_PTRACE, and all its threads.
func threadsLackingPtrace(t *testing.T) (lacking, all int) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if capBounding(t, "self/task/"+task.Name())&(1<<unix.CAP_SYS_PTRACE) == 0 {
			lacking++
		}
	}
	return lacking, len(tasks)
}
