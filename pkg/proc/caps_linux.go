package proc

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DroppedCaps are the capabilities a skill started by a root host never
// gets: the ones that read another process's memory and environment
// (ptrace, /proc/<pid>/mem and environ of a non-dumpable process) or the
// kernel's (modules, raw I/O, BPF, perf). The host is non-dumpable, so
// without them a skill running as root still cannot read the host's
// secrets. It is not a sandbox: a root skill can still write root's files.
// A skill user (SkillUser) is the real isolation.
var DroppedCaps = []uintptr{
	unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE,
	unix.CAP_SYS_RAWIO, unix.CAP_BPF, unix.CAP_PERFMON,
}

// DropSkillCaps removes DroppedCaps from the calling thread's
// capability bounding set, which every process it forks inherits and no
// exec can widen. The bounding set is per thread, so the caller must be
// locked to a thread that does nothing but start and wait for one skill:
// the host's other threads keep every capability. A host that is not root
// has none of them to give away.
func DropSkillCaps() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, c := range DroppedCaps {
		// EINVAL: a capability this kernel does not know (CAP_BPF before 5.8).
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	return nil
}
