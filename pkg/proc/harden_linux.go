package proc

import "golang.org/x/sys/unix"

// Harden makes the host non-dumpable, which on Linux also makes its
// /proc entries (environ, mem, fd) owned by root: a skill running as the
// same non-root user can then no longer read the host's environment, where
// OPENAI_API_KEY may live, through /proc/<host>/environ. Debuggers and core
// dumps of the host are refused as a consequence. A host running as root
// gains nothing from this; run it as its own user (contrib/skillhost.service).
func Harden() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
