//go:build !linux

package proc

import "github.com/skillhost/skillhost/pkg/manifest"

// ApplyRlimits is a no-op where prlimit(2) does not exist: the manifest's
// process limits (memory_mb, max_open_files, cpu_seconds) are accepted and not
// enforced. docs/reliability.md lists what is enforced where.
func ApplyRlimits(pid int, l manifest.Limits) error { return nil }
