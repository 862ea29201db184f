package loader

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// skillDroppedCaps are the capabilities a skill started by a root host never
// gets: the ones that read another process's memory and environment
// (ptrace, /proc/<pid>/mem and environ of a non-dumpable process) or the
// kernel's (modules, raw I/O, BPF, perf). The host is non-dumpable, so
// without them a skill running as root still cannot read the host's
// secrets. It is not a sandbox: a root skill can still write root's files.
// A skill user (Config.SkillUser) is the real isolation.
var skillDroppedCaps = []uintptr{
	unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE,
	unix.CAP_SYS_RAWIO, unix.CAP_BPF, unix.CAP_PERFMON,
}

// warnCapsOnce keeps a host that cannot drop capabilities (a container
// without CAP_SETPCAP) from warning at every launch.
var warnCapsOnce sync.Once

// dropSkillCaps removes skillDroppedCaps from the calling thread's
// capability bounding set, which every process it forks inherits and no
// exec can widen. The bounding set is per thread, so the caller must be
// locked to a thread that does nothing but start and wait for one skill:
// the host's other threads keep every capability. A host that is not root
// has none of them to give away.
func dropSkillCaps() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, c := range skillDroppedCaps {
		// EINVAL: a capability this kernel does not know (CAP_BPF before 5.8).
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	return nil
}
