//go:build linux

package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// ApplyRlimits lowers the operating-system limits of the running skill
// process pid to what its manifest asks, with prlimit(2):
//
//	limits.memory_mb      → RLIMIT_DATA (heap and private writable mappings)
//	limits.max_open_files → RLIMIT_NOFILE
//	limits.cpu_seconds    → RLIMIT_CPU (SIGKILL once the process has used that much CPU)
//
// Soft and hard limits are both set, so the skill cannot raise them again
// (the Go runtime raises its soft RLIMIT_NOFILE to the hard one at start). A
// request above the host's own hard limit is clamped to it: an unprivileged
// host may lower a limit but not raise one.
//
// Why RLIMIT_DATA and not RLIMIT_AS: a Go program reserves about 1.2 GiB of
// address space before it allocates anything (VmSize of an idle skill), so an
// address-space cap either kills every Go skill or bounds nothing; the data
// segment (VmData, about 80 MiB for an idle Go skill) grows with the heap.
// cgroups v2 would bound resident memory precisely and take children along,
// but needs a delegated, writable hierarchy with the memory controller, which
// hosts (and CI containers) often lack; docs/reliability.md says more.
//
// The window: the limits apply once the handshake is done, because that is
// when go-plugin hands over the pid. Until then (at most the start timeout)
// the process runs with the host's limits, and children it forks in that
// window keep them. Children forked later inherit the lowered limits.
func ApplyRlimits(pid int, l manifest.Limits) error {
	type req struct {
		name     string
		resource int
		value    uint64
	}
	var reqs []req
	if l.MemoryMB > 0 {
		reqs = append(reqs, req{"RLIMIT_DATA (memory_mb)", unix.RLIMIT_DATA, uint64(l.MemoryMB) << 20})
	}
	if l.MaxOpenFiles > 0 {
		reqs = append(reqs, req{"RLIMIT_NOFILE (max_open_files)", unix.RLIMIT_NOFILE, uint64(l.MaxOpenFiles)})
	}
	if l.CPUSeconds > 0 {
		reqs = append(reqs, req{"RLIMIT_CPU (cpu_seconds)", unix.RLIMIT_CPU, uint64(l.CPUSeconds)})
	}
	if len(reqs) == 0 {
		return nil
	}
	if pid <= 0 {
		// Never prlimit pid 0: that is the host itself.
		return errors.New("resource limits: the skill's pid is unknown, so its manifest limits cannot be applied")
	}
	for _, r := range reqs {
		var cur unix.Rlimit
		if err := unix.Prlimit(pid, r.resource, nil, &cur); err != nil {
			return fmt.Errorf("resource limits: read %s of pid %d: %w", r.name, pid, err)
		}
		v := r.value
		if cur.Max != unix.RLIM_INFINITY && v > cur.Max {
			v = cur.Max
		}
		if err := unix.Prlimit(pid, r.resource, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("resource limits: set %s of pid %d to %d: %w", r.name, pid, v, err)
		}
	}
	return nil
}
